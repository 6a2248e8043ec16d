//! `sort` and `jq` are in the read-only set; what either does beyond reading is not, through
//! `toolrt serve`. Every attempt here would leave a trace if it ran — overwrite `~/.bashrc`,
//! create its own marker file, or print a secret — and must come back `denied` (every ask is
//! answered with deny) and leave none, in each mode where it would otherwise get through. A
//! control runs every attempt once with its ask answered allow, to show each trace is real.
//!
//! The project holds `.env` (`SECRET=hunter2`) under a `Read(.env)` deny rule; `../outside/`
//! holds `secret.json` (`TOPSECRET`) under a Read deny rule; Bash gets `TOKEN=tok_hunter3` from
//! the settings' `env`; `~/.bashrc` is under an `Edit(~/.bashrc)` deny rule.

mod support;

#[path = "common/serve.rs"]
mod serve;

use serde_json::json;
use serve::*;

const ALL: &[&str] = &[
    "default",
    "acceptEdits",
    "plan",
    "dontAsk",
    "bypassPermissions",
];
/// Where reading the environment would get through: every mode but bypass (which no rule
/// restricts there, so it is allowed as everything else is).
const NOT_BYPASS: &[&str] = &["default", "acceptEdits", "plan", "dontAsk"];

const SECRETS: [&str; 3] = ["hunter2", "TOPSECRET", "tok_hunter3"];

fn project() -> Fixture {
    let fx = Fixture::new();
    fx.write(".env", "SECRET=hunter2\n");
    fx.write("notes.txt", "beta\nalpha\n");
    fx.write("data.json", "{\"a\": 1}\n");
    // `sort --files0-from=list0` would read the files named here.
    fx.write("list0", ".env\0");
    // Each line runs as a command when sort pipes its temporary data through `sh`.
    for i in 0..3 {
        fx.write(
            &format!("cmds{i}.txt"),
            &format!("touch made_sort{i}\n").repeat(3000),
        );
    }
    fx.write("evil/x.jq", "def x: env.TOKEN;\n");
    fx.write("evil/prog.jq", "$ENV.TOKEN\n");
    fx.write("evil/dotjq", "def keys: env.TOKEN;\n");
    std::fs::create_dir_all(fx.root.join("outside")).unwrap();
    std::fs::write(
        fx.root.join("outside/secret.json"),
        "{\"k\": \"TOPSECRET\"}\n",
    )
    .unwrap();
    std::fs::write(fx.home.join(".bashrc"), "keep\n").unwrap();
    fx
}

/// Settings: the deny rules, Bash's `TOKEN`, and `extra` permissions merged in.
fn settings(fx: &Fixture, extra: serde_json::Value) -> std::path::PathBuf {
    let mut permissions = json!({
        "deny": [
            "Read(.env)",
            "Edit(~/.bashrc)",
            format!("Read(/{}/outside/**)", fx.root.display()),
            "Bash(rm *)",
        ]
    });
    if let (Some(p), Some(e)) = (permissions.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    let p = fx.root.join("settings.json");
    std::fs::write(
        &p,
        json!({ "env": { "TOKEN": "tok_hunter3" }, "permissions": permissions }).to_string(),
    )
    .unwrap();
    p
}

/// What one run of attempts came to.
struct Attempt {
    /// Each command's outcome.
    outcomes: Vec<String>,
    /// Each command's result content.
    contents: Vec<String>,
    /// Every trace left, one line each.
    traces: Vec<String>,
}

/// Runs `commands` in `mode` under `rules`, answering every ask with `answer`.
fn attempt(commands: &[&str], mode: &str, rules: bool, answer: &str) -> Attempt {
    let fx = project();
    let s = if rules {
        settings(&fx, json!({}))
    } else {
        settings(&fx, json!({ "deny": [] }))
    };
    let calls: Vec<_> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let c = c
                .replace("{root}", &fx.root.display().to_string())
                .replace("{home}", &fx.home.display().to_string());
            bash(&format!("c{i}"), &c)
        })
        .collect();
    let run = fx.run(&s, &["--permission-mode", mode], &calls, answer);
    let outcomes = (0..commands.len())
        .map(|i| run.outcome(&format!("c{i}")))
        .collect();
    let contents = (0..commands.len())
        .map(|i| run.content(&format!("c{i}")))
        .collect();
    let mut traces = Vec::new();
    let bashrc = std::fs::read_to_string(fx.home.join(".bashrc")).unwrap();
    if bashrc != "keep\n" {
        traces.push(format!("~/.bashrc became {bashrc:?}"));
    }
    for i in 0..3 {
        if fx.path(&format!("made_sort{i}")).exists() {
            traces.push(format!("sort ran its data as commands (made_sort{i})"));
        }
    }
    for line in run
        .lines
        .iter()
        .filter(|l| l["type"] != "permission_request")
    {
        let text = line.to_string();
        if SECRETS.iter().any(|s| text.contains(s)) {
            traces.push(format!("a secret was printed: {text}"));
        }
    }
    Attempt {
        outcomes,
        contents,
        traces,
    }
}

/// Sends every command in each mode; each must be denied and leave no trace.
fn must_hold(commands: &[&str], modes: &[&str]) {
    for mode in modes {
        let Attempt {
            outcomes, traces, ..
        } = attempt(commands, mode, true, "deny");
        let mut bad: Vec<String> = commands
            .iter()
            .zip(&outcomes)
            .filter(|(_, o)| *o != "denied")
            .map(|(c, o)| format!("{mode}: {c:?} -> {o}"))
            .collect();
        bad.extend(traces.iter().map(|t| format!("{mode}: {t}")));
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

const SORT_OUTPUT: &[&str] = &[
    "sort -o ~/.bashrc notes.txt",
    "sort -o {home}/.bashrc notes.txt",
    "sort -ro {home}/.bashrc notes.txt",
    "sort -ro{home}/.bashrc notes.txt",
    "sort --output={home}/.bashrc notes.txt",
    "sort --out {home}/.bashrc notes.txt",
    "sort --outp={home}/.bashrc notes.txt",
    "sort notes.txt -o ~/.bashrc",
    "timeout 5 sort -o ~/.bashrc notes.txt",
];

const SORT_COMPRESS: &[&str] = &[
    "sort -S 1 --compress-program=sh cmds0.txt",
    "sort -S1 --compress=sh -o /dev/null cmds1.txt",
    "sort --compress-prog sh -S 1 cmds2.txt > /dev/null",
];

const READS: &[&str] = &[
    "sort .env",
    "sort --files0-from=list0",
    "sort --files0=list0",
    "jq -R . .env",
    "jq --rawfile s .env -n '$s'",
    "jq --slurpfile s {root}/outside/secret.json -n '$s'",
    "jq . {root}/outside/secret.json",
    "jq -R -n '[inputs]' data.json .env",
];

const MODULES: &[&str] = &[
    "jq -n -L {root}/outside 'import \"secret\" as $s; $s'",
    "jq -n 'import \"secret\" as $s {search: \"{root}/outside\"}; $s'",
    "jq -n -L evil 'include \"x\"; x'",
    "jq -n -Levil 'import \"x\" as m; m::x'",
    "jq -f evil/prog.jq data.json",
    "jq -rf evil/prog.jq data.json",
];

const ENVIRONMENT: &[&str] = &[
    "jq -n env",
    "jq -n '$ENV.TOKEN'",
    "jq -n 'env | .TOKEN'",
    "jq -n '\"\\(env.TOKEN)\"'",
    "jq -n '$ENV | to_entries'",
    "jq '.a, $ENV.TOKEN' data.json",
    "jq -n '1 # comment \\\n| env.TOKEN'",
];

/// Every attempt below is real: run without the deny rules, its ask answered allow, each leaves
/// its own trace (the `~/.bashrc` writes one run each, the others in one run: each prints its
/// secret or makes its own marker).
#[test]
fn control_every_attempt_leaves_a_trace_when_allowed() {
    let mut missing = Vec::new();
    for c in SORT_OUTPUT {
        let a = attempt(&[c], "default", false, "allow");
        if a.traces.is_empty() {
            missing.push(format!("{c:?} -> {}: no trace", a.outcomes[0]));
        }
    }
    let a = attempt(SORT_COMPRESS, "default", false, "allow");
    for (i, c) in SORT_COMPRESS.iter().enumerate() {
        if !a
            .traces
            .iter()
            .any(|t| t.contains(&format!("made_sort{i}")))
        {
            missing.push(format!("{c:?}: no marker"));
        }
    }
    let printing = [READS, MODULES, ENVIRONMENT].concat();
    let a = attempt(&printing, "default", false, "allow");
    for (i, c) in printing.iter().enumerate() {
        if !SECRETS.iter().any(|s| a.contents[i].contains(s)) {
            missing.push(format!("{c:?} -> {}: {}", a.outcomes[i], a.contents[i]));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// `sort -o FILE` writes FILE, however the option is spelled: judged as a write (protected
/// paths, Edit deny rules), never as a read.
#[test]
fn sort_output_is_a_write_in_every_spelling() {
    must_hold(SORT_OUTPUT, ALL);
}

/// `--compress-program=PROG` pipes sort's temporary data through PROG: with `sh`, every line
/// of the input runs as a command. Code toolrt cannot see: asks in every mode, bypass included.
#[test]
fn sort_compress_program_never_runs() {
    must_hold(SORT_COMPRESS, ALL);
}

/// Files sort and jq read through options and operands are reads: Read deny rules hold, and so
/// does the workspace boundary.
#[test]
fn reads_through_options_hold_read_rules() {
    must_hold(READS, ALL);
}

/// Modules: `import`/`include` load `.jq` and `.json` files from any directory (`-L`, or the
/// import's own `search`), and a filter from a file (`-f`) may do the same.
#[test]
fn jq_modules_and_filter_files_are_not_auto_allowed() {
    must_hold(MODULES, ALL);
}

/// The environment may hold secrets; a filter that reads it is not read-only.
#[test]
fn jq_environment_is_not_read_only() {
    must_hold(ENVIRONMENT, NOT_BYPASS);
}

/// jq loads `~/.jq` (or `~/jq/main.jq`) into every filter, where definitions can redefine any
/// builtin: `def keys: env.TOKEN;` turns `jq keys` into a leak. Even with home inside the
/// workspace, the agent cannot write them without approval, so the later `jq keys` prints no
/// secret.
#[test]
fn jq_startup_files_are_protected() {
    for mode in ["default", "acceptEdits", "dontAsk"] {
        let fx = project();
        let s = settings(
            &fx,
            json!({ "additionalDirectories": [fx.home.display().to_string()] }),
        );
        let home = fx.home.display().to_string();
        let calls = vec![
            bash("w1", &format!("cp evil/dotjq {home}/.jq")),
            bash("w2", "cat evil/dotjq > ~/.jq"),
            bash(
                "w3",
                &format!("mkdir -p {home}/jq; cp evil/dotjq {home}/jq/main.jq"),
            ),
            call(
                "w4",
                "Write",
                json!({ "file_path": format!("{home}/.jq"), "content": "def keys: env.TOKEN;\n" }),
            ),
        ];
        let run = fx.run(&s, &["--permission-mode", mode], &calls, "deny");
        for id in ["w1", "w2", "w3", "w4"] {
            assert_eq!(
                run.outcome(id),
                "denied",
                "{mode} {id}: {}",
                run.content(id)
            );
        }
        assert!(!fx.home.join(".jq").exists(), "{mode}: ~/.jq written");
        assert!(
            !fx.home.join("jq/main.jq").exists(),
            "{mode}: ~/jq/main.jq written"
        );
        // And jq itself still runs without asking.
        let run = fx.run(
            &s,
            &["--permission-mode", mode],
            &[bash("r", "jq -c keys data.json")],
            "deny",
        );
        assert_eq!(run.outcome("r"), "success", "{mode}: {}", run.content("r"));
        assert!(run.content("r").contains("[\"a\"]"), "{}", run.content("r"));
    }
}

/// The other side: sort's output file is judged as the write it is, so where writes are
/// allowed it runs (acceptEdits inside the workspace, an Edit allow rule), and elsewhere it asks
/// and writes nothing.
#[test]
fn sort_output_inside_the_workspace_follows_the_write_rules() {
    for (mode, extra, written) in [
        ("acceptEdits", json!({}), true),
        ("default", json!({ "allow": ["Edit(sorted.txt)"] }), true),
        ("default", json!({}), false),
        ("plan", json!({}), false),
        ("dontAsk", json!({}), false),
    ] {
        let fx = project();
        let s = settings(&fx, extra);
        let run = fx.run(
            &s,
            &["--permission-mode", mode],
            &[bash("s", "sort -o sorted.txt notes.txt")],
            "deny",
        );
        let out = fx.path("sorted.txt");
        if written {
            assert_eq!(run.outcome("s"), "success", "{mode}: {}", run.content("s"));
            assert_eq!(std::fs::read_to_string(&out).unwrap(), "alpha\nbeta\n");
        } else {
            assert_eq!(run.outcome("s"), "denied", "{mode}: {}", run.content("s"));
            assert!(!out.exists(), "{mode}: sorted.txt written");
        }
    }
}
