//! Agent types: the settings key `agents` (`{"<type>": {tools?, permissions?, permissionMode?,
//! maxInFlight?, node?}}`), checked and compiled once at start-up, and `toolrt.maxAgentDepth`.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::permission::{Mode, Policy, PolicyBuilder, PolicyError};
use crate::settings::{Settings, SettingsError, key_err};

/// How deep agents may nest when settings do not say (`toolrt.maxAgentDepth`): a top-level
/// agent is at depth 1.
pub(crate) const DEFAULT_MAX_DEPTH: u32 = 5;

/// The deepest `toolrt.maxAgentDepth` may allow.
pub(crate) const MAX_MAX_DEPTH: u32 = 64;

/// The largest `maxInFlight` an agent type may give.
const MAX_IN_FLIGHT: u64 = 1_000_000;

/// A set of tool names an agent type may use (`tools`). A name covers itself; `mcp__server`
/// covers every tool of that server; `Agent` and `Task` cover each other.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ToolSet {
    names: HashSet<String>,
}

impl ToolSet {
    /// The set of these names.
    pub(crate) fn new<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Self {
            names: names.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether `tool` (a canonical name) is in the set.
    pub(crate) fn allows(&self, tool: &str) -> bool {
        if self.names.contains(tool) {
            return true;
        }
        let other = match tool {
            "Agent" => Some("Task"),
            "Task" => Some("Agent"),
            _ => None,
        };
        if other.is_some_and(|o| self.names.contains(o)) {
            return true;
        }
        tool.strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
            .is_some_and(|(server, _)| self.names.contains(&format!("mcp__{server}")))
    }

    /// The tools both sets allow, as one set: each name of one set that the other allows
    /// (a name covered by both sets is covered by one of those).
    pub(crate) fn intersect(&self, other: &ToolSet) -> ToolSet {
        let names = self
            .names
            .iter()
            .filter(|n| other.allows(n))
            .chain(other.names.iter().filter(|n| self.allows(n)))
            .cloned()
            .collect();
        ToolSet { names }
    }

    /// The names, sorted (for messages).
    pub(crate) fn sorted(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.names.iter().map(String::as_str).collect();
        v.sort_unstable();
        v
    }
}

/// A child's tool selection: the intersection of its parent's and its own; `None` is "every
/// tool that exists", and a type without `tools` inherits its parent's.
pub(crate) fn narrow_tools(
    parent: Option<&Arc<ToolSet>>,
    own: Option<&Arc<ToolSet>>,
) -> Option<Arc<ToolSet>> {
    match (parent, own) {
        (None, None) => None,
        (Some(p), None) => Some(p.clone()),
        (None, Some(o)) => Some(o.clone()),
        (Some(p), Some(o)) => Some(Arc::new(p.intersect(o))),
    }
}

/// One agent type, compiled.
#[derive(Debug)]
pub(crate) struct AgentType {
    /// Its name, as `agent_start` and `Agent(…)` rules give it.
    pub name: Arc<str>,
    /// `tools`: the tools it may use (intersected with its parent's); `None` inherits.
    pub tools: Option<Arc<ToolSet>>,
    /// `permissions`: its own rules, compiled; `None` inherits its parent's.
    pub policy: Option<Arc<Policy>>,
    /// `permissionMode`; `None` inherits its parent's mode.
    pub mode: Option<Mode>,
    /// `maxInFlight`: calls of one agent of this type executing at once.
    pub max_in_flight: Option<usize>,
    /// `node`: the worker node its agents' calls run on (a worker's name or address).
    pub node: Option<Arc<str>>,
}

/// Every agent type of the settings, and the depth limit.
#[derive(Debug)]
pub(crate) struct AgentTypes {
    types: HashMap<String, Arc<AgentType>>,
    /// `toolrt.maxAgentDepth`.
    pub max_depth: u32,
}

impl Default for AgentTypes {
    fn default() -> Self {
        Self {
            types: HashMap::new(),
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

/// Why the `agents` settings cannot be used. Display names the file and the key.
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    /// A value of the wrong shape.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// A malformed rule in an agent type's `permissions`.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// What agent types' rules are anchored to: the session's directories.
pub(crate) struct Base<'a> {
    /// The working directory.
    pub cwd: &'a Path,
    /// The home directory.
    pub home: &'a Path,
    /// The session's workspace (the working directory and `additionalDirectories`).
    pub workspace: &'a [std::path::PathBuf],
    /// toolrt's output folder, whose reads need no rule.
    pub output_dir: Option<&'a Path>,
}

impl AgentTypes {
    /// Reads `agents` and `toolrt.maxAgentDepth` from every settings file (a later file's
    /// definition of a type replaces an earlier one whole), compiling each type's rules.
    /// Keys toolrt does not read are returned as warnings.
    pub(crate) fn compile(
        settings: &Settings,
        base: &Base<'_>,
    ) -> Result<(Self, Vec<String>), AgentsError> {
        let mut warnings = Vec::new();
        let mut defs: HashMap<String, (&Path, &Map<String, Value>)> = HashMap::new();
        for (file, agents) in settings.sections("agents") {
            let Value::Object(agents) = agents else {
                return Err(key_err(
                    file,
                    "agents",
                    "expected an object of agent type → definition",
                    agents,
                )
                .into());
            };
            for (name, def) in agents {
                let key = format!("agents.{name}");
                if name.is_empty() || name.len() > crate::protocol::MAX_ID_BYTES {
                    return Err(
                        key_err(file, &key, "expected a type name of 1 to 256 bytes", def).into(),
                    );
                }
                let Value::Object(def) = def else {
                    return Err(key_err(file, &key, "expected an object", def).into());
                };
                defs.insert(name.clone(), (file, def));
            }
        }
        let mut types = HashMap::with_capacity(defs.len());
        for (name, (file, def)) in defs {
            let t = compile_type(&name, file, def, base, &mut warnings)?;
            types.insert(name, Arc::new(t));
        }
        let mut max_depth = DEFAULT_MAX_DEPTH;
        for (file, toolrt) in settings.sections("toolrt") {
            if let Some(v) = toolrt.get("maxAgentDepth") {
                match v.as_u64() {
                    Some(n) if (1..=u64::from(MAX_MAX_DEPTH)).contains(&n) => max_depth = n as u32,
                    _ => {
                        return Err(key_err(
                            file,
                            "toolrt.maxAgentDepth",
                            &format!("expected an integer from 1 to {MAX_MAX_DEPTH}"),
                            v,
                        )
                        .into());
                    }
                }
            }
        }
        Ok((Self { types, max_depth }, warnings))
    }

    /// The type named `name`, if the settings define it. A type they do not define adds
    /// nothing of its own: its agents have their parent's tools, rules and mode.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<AgentType>> {
        self.types.get(name)
    }
}

fn compile_type(
    name: &str,
    file: &Path,
    def: &Map<String, Value>,
    base: &Base<'_>,
    warnings: &mut Vec<String>,
) -> Result<AgentType, AgentsError> {
    let key = |k: &str| format!("agents.{name}.{k}");
    let mut t = AgentType {
        name: Arc::from(name),
        tools: None,
        policy: None,
        mode: None,
        max_in_flight: None,
        node: None,
    };
    for (k, v) in def {
        match k.as_str() {
            "tools" => {
                let Some(items) = v.as_array() else {
                    return Err(key_err(file, &key(k), "expected an array of tool names", v).into());
                };
                let mut names = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(s) if !s.is_empty() && s.len() <= crate::protocol::MAX_ID_BYTES => {
                            names.push(s.to_string())
                        }
                        _ => {
                            return Err(key_err(
                                file,
                                &format!("{}[{i}]", key(k)),
                                "expected a tool name (a string of 1 to 256 bytes)",
                                item,
                            )
                            .into());
                        }
                    }
                }
                t.tools = Some(Arc::new(ToolSet::new(names)));
            }
            "permissions" => t.policy = Some(compile_rules(name, file, v, base, warnings)?),
            "permissionMode" => {
                let Some(m) = v.as_str() else {
                    return Err(key_err(file, &key(k), "expected a mode name", v).into());
                };
                t.mode = Some(m.parse::<Mode>().map_err(|e| SettingsError::Key {
                    file: file.to_path_buf(),
                    key: key(k),
                    expected: e.to_string(),
                })?);
            }
            "maxInFlight" => match v.as_u64() {
                Some(n) if (1..=MAX_IN_FLIGHT).contains(&n) => t.max_in_flight = Some(n as usize),
                _ => {
                    return Err(key_err(
                        file,
                        &key(k),
                        &format!("expected an integer from 1 to {MAX_IN_FLIGHT}"),
                        v,
                    )
                    .into());
                }
            },
            "node" => match v.as_str() {
                Some(s)
                    if !s.is_empty()
                        && s.len() <= crate::protocol::MAX_ID_BYTES
                        && !s.chars().any(char::is_control) =>
                {
                    t.node = Some(Arc::from(s))
                }
                _ => {
                    return Err(key_err(
                        file,
                        &key(k),
                        "expected a worker node's name or address (a string of 1 to 256 bytes)",
                        v,
                    )
                    .into());
                }
            },
            // The reference CLI's agent files carry a prompt, a model, a description: the
            // orchestrator's business, not toolrt's.
            _ => warnings.push(format!(
                "{}: unknown key {:?} ignored (an agent type has tools, permissions, permissionMode, maxInFlight and node)",
                file.display(),
                key(k)
            )),
        }
    }
    Ok(t)
}

/// An agent type's `permissions`: its allow, ask and deny lists, compiled against the
/// session's directories.
fn compile_rules(
    name: &str,
    file: &Path,
    v: &Value,
    base: &Base<'_>,
    warnings: &mut Vec<String>,
) -> Result<Arc<Policy>, AgentsError> {
    let prefix = format!("agents.{name}.");
    let Value::Object(map) = v else {
        return Err(key_err(
            file,
            &format!("{prefix}permissions"),
            "expected an object",
            v,
        )
        .into());
    };
    let mut rules = Map::new();
    for (k, list) in map {
        if matches!(k.as_str(), "allow" | "ask" | "deny") {
            rules.insert(k.clone(), list.clone());
        } else {
            warnings.push(format!(
                "{}: unknown key \"{prefix}permissions.{k}\" ignored (an agent type's permissions hold allow, ask and deny; directories and modes come from the session and permissionMode)",
                file.display()
            ));
        }
    }
    let mut b = PolicyBuilder::new(base.cwd.to_path_buf(), base.home.to_path_buf());
    for dir in base.workspace.iter().skip(1) {
        b.add_directory(&dir.to_string_lossy());
    }
    if let Some(dir) = base.output_dir {
        b.add_output_dir(dir);
    }
    // The builder names `permissions.allow[2]`; the rule is under the agent type.
    let place = |e: PolicyError| match e {
        PolicyError::Rule { origin, source } => PolicyError::Rule {
            origin: origin.replacen("permissions.", &format!("{prefix}permissions."), 1),
            source,
        },
        PolicyError::Settings { file, key, message } => PolicyError::Settings {
            file,
            key: format!("{prefix}{key}"),
            message,
        },
    };
    b.add_settings_file(file, &Value::Object(rules))
        .map_err(place)?;
    for w in b.warnings() {
        warnings.push(w.replacen("permissions.", &format!("{prefix}permissions."), 1));
    }
    Ok(Arc::new(b.build().map_err(place)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(text: &str) -> Result<(AgentTypes, Vec<String>), String> {
        let mut settings = Settings::default();
        let dir = std::env::temp_dir();
        settings
            .merge_text(&dir.join("s.json"), text)
            .map_err(|e| e.to_string())?;
        let ws = [dir.clone()];
        let base = Base {
            cwd: &dir,
            home: &dir,
            workspace: &ws,
            output_dir: None,
        };
        AgentTypes::compile(&settings, &base).map_err(|e| e.to_string())
    }

    #[test]
    fn a_type_reads_its_four_keys() {
        let (types, warnings) = compile(
            r#"{"agents": {"tester": {"tools": ["Read", "Bash", "mcp__gh"], "permissions": {"allow": ["Bash(cargo test)"], "deny": ["Bash(rm *)"]}, "permissionMode": "plan", "maxInFlight": 2, "model": "x"}}, "toolrt": {"maxAgentDepth": 3}}"#,
        )
        .unwrap();
        let t = types.get("tester").unwrap();
        let tools = t.tools.as_ref().unwrap();
        assert!(tools.allows("Read") && tools.allows("mcp__gh__issue") && !tools.allows("Edit"));
        assert!(t.policy.is_some());
        assert_eq!((t.mode, t.max_in_flight), (Some(Mode::Plan), Some(2)));
        assert_eq!(types.max_depth, 3);
        assert!(
            warnings.iter().any(|w| w.contains("agents.tester.model")),
            "{warnings:?}"
        );
        assert!(types.get("other").is_none());
    }

    #[test]
    fn bad_values_name_the_file_and_key() {
        for (text, needle) in [
            (r#"{"agents": []}"#, "agents: expected an object"),
            (r#"{"agents": {"t": 3}}"#, "agents.t: expected an object"),
            (
                r#"{"agents": {"t": {"tools": "Read"}}}"#,
                "agents.t.tools: expected an array",
            ),
            (r#"{"agents": {"t": {"tools": [""]}}}"#, "agents.t.tools[0]"),
            (
                r#"{"agents": {"t": {"permissionMode": "yolo"}}}"#,
                "agents.t.permissionMode: unknown permission mode",
            ),
            (
                r#"{"agents": {"t": {"maxInFlight": 0}}}"#,
                "agents.t.maxInFlight",
            ),
            (
                r#"{"agents": {"t": {"permissions": {"allow": ["Bash("]}}}}"#,
                "agents.t.permissions.allow[0]",
            ),
            (
                r#"{"agents": {"t": {"permissions": {"deny": "Bash"}}}}"#,
                "agents.t.permissions.deny",
            ),
            (
                r#"{"toolrt": {"maxAgentDepth": 0}}"#,
                "toolrt.maxAgentDepth",
            ),
            (
                r#"{"toolrt": {"maxAgentDepth": 65}}"#,
                "toolrt.maxAgentDepth",
            ),
        ] {
            let err = compile(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(err.contains("s.json"), "{text}: {err}");
        }
    }

    #[test]
    fn selections_intersect() {
        let set = |names: &[&str]| Some(Arc::new(ToolSet::new(names.iter().copied())));
        type Row<'a> = (
            Option<Arc<ToolSet>>,
            Option<Arc<ToolSet>>,
            &'a [&'a str],
            &'a [&'a str],
        );
        let rows: [Row<'_>; 5] = [
            (None, None, &["Read", "Edit"], &[]),
            (set(&["Read", "Bash"]), None, &["Read", "Bash"], &["Edit"]),
            (None, set(&["Read"]), &["Read"], &["Bash"]),
            (
                set(&["Read", "Bash"]),
                set(&["Read", "Edit"]),
                &["Read"],
                &["Bash", "Edit"],
            ),
            (
                set(&["mcp__gh", "Task"]),
                set(&["mcp__gh__issue", "mcp__fs", "Agent"]),
                &["mcp__gh__issue", "Agent", "Task"],
                &["mcp__gh__pr", "mcp__fs__read"],
            ),
        ];
        for (parent, own, yes, no) in rows {
            let child = narrow_tools(parent.as_ref(), own.as_ref());
            let allows = |t: &str| child.as_ref().is_none_or(|s| s.allows(t));
            for t in yes {
                assert!(allows(t), "{t} in {child:?}");
            }
            for t in no {
                assert!(!allows(t), "{t} not in {child:?}");
            }
        }
    }
}
