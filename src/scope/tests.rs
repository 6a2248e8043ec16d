use super::*;
use crate::permission::{Policy, PolicyBuilder};
use crate::settings::Settings;
use serde_json::json;

fn policy(rules: Value) -> Arc<Policy> {
    let dir = std::env::temp_dir();
    let mut b = PolicyBuilder::new(dir.clone(), dir.clone());
    b.add_settings_file(&dir.join("s.json"), &rules).unwrap();
    Arc::new(b.build().unwrap())
}

/// The agent types of settings whose `agents` key is `agents`.
fn compile(agents: Value) -> Result<AgentTypes, types::AgentsError> {
    let dir = std::env::temp_dir();
    let mut settings = Settings::default();
    settings
        .merge_text(
            &dir.join("s.json"),
            &json!({ "agents": agents }).to_string(),
        )
        .unwrap();
    let ws = [dir.clone()];
    let base = types::Base {
        cwd: &dir,
        home: &dir,
        workspace: &ws,
        output_dir: None,
    };
    Ok(AgentTypes::compile(&settings, &base)?.0)
}

fn table(session_rules: Value, agents: Value) -> ScopeTable {
    ScopeTable::new(
        Arc::new(compile(agents).unwrap()),
        Level {
            policy: policy(session_rules),
            mode: Mode::Default,
            label: Arc::from("the session's rules"),
        },
    )
}

fn req(id: &str, ty: &str, parent: Option<&str>) -> StartRequest {
    StartRequest {
        agent_id: id.into(),
        agent_type: ty.into(),
        parent: parent.map(String::from),
        parent_tool_use_id: None,
        node: None,
        decided: false,
    }
}

#[test]
fn start_is_refused_with_a_reason_and_changes_nothing() {
    let t = table(
        json!({"deny": ["Agent(deployer)"], "ask": ["Agent(auditor)"]}),
        json!({"lead": {"permissions": {"deny": ["Agent(helper)"]}}}),
    );
    t.start(req("a", "lead", None), None).unwrap();
    let rows = [
        (req("a", "lead", None), "already exists"),
        (req("b", "lead", Some("b")), "names itself as its parent"),
        (
            req("b", "lead", Some("nobody")),
            "unknown parent agent \"nobody\"",
        ),
        (req("b", "deployer", None), "Agent(deployer)"),
        (req("b", "auditor", None), "would need approval"),
        // The parent's own deny of a type refuses it for the parent's children only.
        (req("b", "helper", Some("a")), "agent type \"lead\""),
        // The Agent tool's ids are its own.
        (req("agent-1", "lead", None), "is reserved"),
        (req("agent-20", "lead", Some("a")), "is reserved"),
    ];
    for (r, needle) in rows {
        let err = t.start(r.clone(), None).unwrap_err().to_string();
        assert!(err.contains(needle), "{r:?}: {err}");
    }
    assert_eq!(t.len(), 1);
    t.start(req("b", "helper", None), None).unwrap();
    assert_eq!(t.len(), 2);
}

#[test]
fn depth_is_limited_by_the_setting() {
    let t = table(json!({}), json!({}));
    t.start(req("d1", "x", None), None).unwrap();
    for depth in 2..=types::DEFAULT_MAX_DEPTH {
        let (id, parent) = (format!("d{depth}"), format!("d{}", depth - 1));
        let s = t.start(req(&id, "x", Some(&parent)), None).unwrap();
        assert_eq!(s.depth, depth);
    }
    let err = t
        .start(req("d6", "x", Some("d5")), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("6 levels deep; at most 5"), "{err}");
    assert!(err.contains("toolrt.maxAgentDepth"), "{err}");
}

#[test]
fn the_number_of_live_scopes_is_capped() {
    let t = table(json!({}), json!({})).with_max_scopes(3);
    for i in 0..3 {
        t.start(req(&format!("a{i}"), "x", None), None).unwrap();
    }
    let err = t.start(req("a3", "x", None), None).unwrap_err();
    assert!(matches!(err, ScopeError::TooMany { max: 3, .. }), "{err}");
    t.end("a0").unwrap();
    t.start(req("a3", "x", None), None).unwrap();
    assert_eq!(t.len(), 3);
}

#[test]
fn ending_a_parent_ends_its_subtree_and_cancels_it() {
    let t = table(json!({}), json!({}));
    let root_call = CancellationToken::new();
    let a = t.start(req("a", "x", None), Some(&root_call)).unwrap();
    let b = t.start(req("b", "x", Some("a")), None).unwrap();
    let c = t.start(req("c", "x", Some("b")), None).unwrap();
    let other = t.start(req("o", "x", None), None).unwrap();
    let ended = t.end("a").unwrap();
    let ended: Vec<&str> = ended.iter().map(|s| &**s).collect();
    assert_eq!(ended, ["c", "b", "a"]);
    assert!(a.cancel.is_cancelled() && b.cancel.is_cancelled() && c.cancel.is_cancelled());
    assert!(c.has_ended() && !other.has_ended() && !other.cancel.is_cancelled());
    assert!(t.resolve("b").is_none() && t.resolve("o").is_some());
    assert_eq!(t.len(), 1);
    // An ended agent is unknown; its id may be used again, as a new scope.
    assert_eq!(t.end("a").unwrap_err(), ScopeError::Unknown("a".into()));
    let err = t.start(req("d", "x", Some("a")), None).unwrap_err();
    assert!(matches!(err, ScopeError::UnknownParent { .. }), "{err}");
    let again = t.start(req("a", "x", None), None).unwrap();
    assert_ne!(again.key, a.key);
}

#[test]
fn the_opening_call_and_the_parent_own_the_token() {
    let t = table(json!({}), json!({}));
    let call = CancellationToken::new();
    let a = t.start(req("a", "x", None), None).unwrap();
    let b = t.start(req("b", "x", Some("a")), Some(&call)).unwrap();
    call.cancel();
    assert!(b.cancel.is_cancelled() && !a.cancel.is_cancelled());
    let c = t.start(req("c", "x", Some("a")), None).unwrap();
    t.cancel_all();
    assert!(a.cancel.is_cancelled() && c.cancel.is_cancelled());
}

#[test]
fn a_child_narrows_and_inherits() {
    let t = table(
        json!({"allow": ["Bash(cargo *)"]}),
        json!({
            "lead": {"tools": ["Read", "Bash", "Edit"], "permissionMode": "acceptEdits", "maxInFlight": 4},
            "tester": {"tools": ["Read", "Bash", "Write"], "permissions": {"allow": ["Bash(make *)", "Bash(cargo test)"]}, "maxInFlight": 8},
            "bypasser": {"permissionMode": "bypassPermissions"}
        }),
    );
    let lead = t.start(req("lead", "lead", None), None).unwrap();
    // acceptEdits is wider than the session's default: not gained.
    assert_eq!(lead.mode(), Mode::Default);
    let tester = t.start(req("t", "tester", Some("lead")), None).unwrap();
    assert!(tester.may_use("Read") && tester.may_use("Bash"));
    assert!(!tester.may_use("Write") && !tester.may_use("Edit") && !tester.may_use("Glob"));
    assert_eq!(tester.max_in_flight, Some(4));
    // A type the settings do not define, and a type without tools or rules: the parent's.
    let plain = t.start(req("p", "undefined", Some("t")), None).unwrap();
    assert_eq!(plain.tools, tester.tools);
    assert!(Arc::ptr_eq(&plain.chain, &tester.chain));
    let by = t.start(req("b", "bypasser", Some("t")), None).unwrap();
    assert_eq!(by.mode(), Mode::Default);
    assert_eq!(by.chain.levels().len(), tester.chain.levels().len());
    let bash = |s: &Scope, cmd: &str| {
        let input = json!({ "command": cmd });
        let access = Access {
            subject: Subject::Command { field: "command" },
            allowed_by_default: false,
        };
        s.chain
            .decide("Bash", access, input.as_object().unwrap(), None)
            .behavior
    };
    assert_eq!(bash(&tester, "cargo test"), Behavior::Allow);
    assert_eq!(bash(&tester, "make all"), Behavior::Ask);
    assert_eq!(bash(&tester, "cargo build"), Behavior::Ask);
    assert_eq!(bash(&lead, "cargo build"), Behavior::Allow);
}

#[test]
fn racing_starts_and_ends_leave_the_table_consistent() {
    let t = Arc::new(table(json!({}), json!({})).with_max_scopes(64));
    t.start(req("root", "x", None), None).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|n| {
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..200 {
                    let id = format!("c{n}-{i}");
                    let _ = t.start(req(&id, "x", Some("root")), None);
                    if i % 2 == 0 {
                        let _ = t.end(&id);
                    }
                }
            })
        })
        .collect();
    let ender = {
        let t = t.clone();
        std::thread::spawn(move || {
            let _ = t.end("root");
        })
    };
    for th in threads {
        th.join().unwrap();
    }
    ender.join().unwrap();
    // Whatever interleaving: every live scope's parent is live, and the count agrees.
    let live: Vec<Arc<Scope>> = t.scopes.iter().map(|e| e.value().clone()).collect();
    assert_eq!(live.len(), t.len());
    for s in &live {
        assert!(!s.has_ended());
        if let Some(p) = &s.parent {
            assert!(
                t.resolve(&p.id).is_some_and(|q| q.key == p.key),
                "{} orphaned",
                s.id
            );
        }
    }
}

/// Records what a [`ScopeListener`] is told: each scope started or ended, and how many ends.
#[derive(Default)]
struct Record(Mutex<Vec<(bool, String, u64)>>, AtomicUsize);

impl ScopeListener for Record {
    fn started(&self, scope: &Scope) {
        self.0
            .lock()
            .unwrap()
            .push((true, scope.id.to_string(), scope.key));
    }
    fn ended(&self, scopes: &[Arc<Scope>]) {
        self.1.fetch_add(1, Ordering::SeqCst);
        let mut heard = self.0.lock().unwrap();
        for scope in scopes {
            heard.push((false, scope.id.to_string(), scope.key));
        }
    }
}

#[test]
fn the_listener_hears_each_start_and_each_end_once_by_key() {
    let record = Arc::new(Record::default());
    let t = table(json!({}), json!({}));
    t.listen(record.clone());
    let a = t.start(req("a", "x", None), None).unwrap();
    let b = t.start(req("b", "x", Some("a")), None).unwrap();
    assert!(
        t.start(req("a", "x", None), None).is_err(),
        "a refused start is not heard"
    );
    t.end("a").unwrap();
    assert_eq!(record.1.load(Ordering::SeqCst), 1, "one end, told once");
    assert!(t.end("a").is_err());
    assert_eq!(
        record.1.load(Ordering::SeqCst),
        1,
        "a refused end is not heard"
    );
    let again = t.start(req("a", "x", None), None).unwrap();
    assert_ne!(again.key, a.key, "an id used again is another scope");
    assert_ne!(again.state_key(), a.state_key());
    let heard = record.0.lock().unwrap().clone();
    let expected = vec![
        (true, "a".to_string(), a.key),
        (true, "b".to_string(), b.key),
        (false, "b".to_string(), b.key),
        (false, "a".to_string(), a.key),
        (true, "a".to_string(), again.key),
    ];
    assert_eq!(heard, expected);
}

#[test]
fn only_the_agent_tools_id_form_is_reserved() {
    let rows = [
        ("agent-1", true),
        ("agent-0042", true),
        ("agent-", false),
        ("agent-1a", false),
        ("agent-x", false),
        ("Agent-1", false),
        ("my-agent-1", false),
        ("agent", false),
    ];
    for (id, reserved) in rows {
        assert_eq!(is_agent_tool_id(id), reserved, "{id}");
    }
    // The Agent tool itself (a decided start) may use its form.
    let t = table(json!({}), json!({}));
    let mut r = req("agent-3", "x", None);
    r.decided = true;
    t.start(r, None).unwrap();
}

#[test]
fn an_agents_node_is_its_starts_else_its_types_else_its_parents() {
    let t = table(
        json!({}),
        json!({"builder": {"node": "w2"}, "helper": {}, "tester": {"node": "10.0.0.3:7301"}}),
    )
    .with_nodes(true);
    let node = |s: &Scope| s.node.as_deref().map(String::from);
    let lead = t.start(req("lead", "helper", None), None).unwrap();
    assert_eq!(node(&lead), None, "no node named: any worker");
    let b = t.start(req("b", "builder", Some("lead")), None).unwrap();
    assert_eq!(node(&b).as_deref(), Some("w2"), "its type's");
    let h = t.start(req("h", "helper", Some("b")), None).unwrap();
    assert_eq!(node(&h).as_deref(), Some("w2"), "its parent's");
    let te = t.start(req("te", "tester", Some("b")), None).unwrap();
    assert_eq!(
        node(&te).as_deref(),
        Some("10.0.0.3:7301"),
        "its type's over its parent's"
    );
    let own = StartRequest {
        node: Some("w1".into()),
        ..req("own", "builder", Some("b"))
    };
    assert_eq!(
        node(&t.start(own, None).unwrap()).as_deref(),
        Some("w1"),
        "its start's first"
    );
}

#[test]
fn an_agent_placed_on_a_node_does_not_start_in_a_session_without_workers() {
    let t = table(json!({}), json!({"builder": {"node": "w2"}}));
    let err = t.start(req("b", "builder", None), None).unwrap_err();
    assert_eq!(
        err,
        ScopeError::NoNodes {
            agent: "b".into(),
            node: "w2".into()
        }
    );
    assert!(err.to_string().contains("no worker nodes"), "{err}");
    let own = StartRequest {
        node: Some("w1".into()),
        ..req("x", "other", None)
    };
    assert!(matches!(
        t.start(own, None),
        Err(ScopeError::NoNodes { .. })
    ));
    assert_eq!(t.len(), 0, "nothing started");
    // A type without a node starts as before.
    t.start(req("y", "other", None), None).unwrap();
}

#[test]
fn an_agent_types_node_must_be_a_name() {
    for bad in [json!(""), json!(3), json!(["w1"]), json!("w\u{1}")] {
        let err = compile(json!({"t": {"node": bad}})).unwrap_err();
        assert!(err.to_string().contains("agents.t.node"), "{err}");
    }
}
