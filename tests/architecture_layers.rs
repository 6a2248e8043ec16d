//! The layering ARCHITECTURE.md states ("X never imports Y") holds in the source: every
//! `crate::<module>` path in a module's non-test code is checked against the rules below. A
//! rule broken here is a design change: change ARCHITECTURE.md with it, or move the code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules that import nothing else of the crate.
const LEAVES: &[&str] = &[
    "call",
    "session",
    "process",
    "deadlines",
    "slots",
    "otel",
    "client_waits",
    "input_shape",
    "quote",
    "http_client",
];

/// Modules that import only the modules listed with them.
const ONLY: &[(&str, &[&str])] = &[
    // The tool API knows calls and the session, nothing of the pipeline or the wire.
    ("tool", &["call", "session"]),
    // Built-in tools: the tool API, paths, processes, the shell analysis, the HTTP client.
    (
        "tools",
        &[
            "call",
            "tool",
            "session",
            "paths",
            "process",
            "shell",
            "http_client",
        ],
    ),
    // The shell analysis is shared by the permission stage and the Bash tool.
    ("shell", &["paths", "session"]),
    // The wire knows calls, and the format names of the API messages it carries.
    ("protocol", &["call", "formats", "quote"]),
    // The model APIs' shapes: pure translation of calls and results, called at the edge.
    ("formats", &["call", "quote"]),
    ("paths", &["session"]),
    // The Bash sandbox: its settings, excluded commands matched as Bash rules are, processes.
    // The tools and the permission engine reach it only through `session::ShellSandbox`.
    (
        "sandbox",
        &[
            "permission",
            "settings",
            "session",
            "process",
            "shell",
            "paths",
        ],
    ),
];

/// Pairs (X, Y): X never imports Y.
const NEVER: &[(&str, &[&str])] = &[
    // The permission engine asks tools (`Tool::access`), never knows them.
    ("permission", &["tools", "registry"]),
    // The in-flight table is imported by the dispatcher and the supervisor, never the reverse.
    ("inflight", &["dispatch", "supervisor", "runtime"]),
    // Stages never call the next stage's owner or the layers above them.
    (
        "validate",
        &[
            "supervisor",
            "dispatch",
            "runtime",
            "server",
            "emit",
            "inflight",
        ],
    ),
    (
        "hooks",
        &[
            "supervisor",
            "dispatch",
            "runtime",
            "server",
            "emit",
            "inflight",
        ],
    ),
    (
        "permission",
        &[
            "supervisor",
            "dispatch",
            "runtime",
            "server",
            "emit",
            "inflight",
        ],
    ),
    (
        "execute",
        &[
            "supervisor",
            "dispatch",
            "runtime",
            "server",
            "emit",
            "inflight",
        ],
    ),
    (
        "budget",
        &[
            "supervisor",
            "dispatch",
            "runtime",
            "server",
            "emit",
            "inflight",
        ],
    ),
    // Client tools are tools: the pipeline runs them, they never drive it.
    (
        "client_tools",
        &["supervisor", "dispatch", "runtime", "server", "inflight"],
    ),
    // Agent scopes sit above the permission engine and the hooks (which never know them) and
    // below whoever drives calls: the supervisor, the dispatcher and the runtime use the scope
    // table, never the reverse.
    (
        "scope",
        &[
            "supervisor",
            "dispatch",
            "runtime",
            "server",
            "inflight",
            "tools",
            "validate",
            "execute",
            "budget",
        ],
    ),
    ("permission", &["scope", "sandbox"]),
    ("hooks", &["scope"]),
    // The supervisor is below the dispatcher and the runtime.
    ("supervisor", &["dispatch", "runtime", "server", "tools"]),
    ("dispatch", &["runtime", "server", "tools"]),
    // Only the binary's command line uses the CLI and the benchmark.
    ("runtime", &["cli", "bench"]),
    // MCP servers' tools are tools: they never reach into the pipeline's stages or its owners.
    (
        "mcp",
        &[
            "supervisor",
            "dispatch",
            "runtime",
            "server",
            "inflight",
            "permission",
            "validate",
            "hooks",
            "execute",
        ],
    ),
    ("server", &["cli", "bench"]),
    // `toolrt mcp-serve` sits over the library as `serve` does: it drives a `Runtime` and reads
    // its outbox, never a stage, the supervisor or the MCP client side; nothing below it
    // imports it.
    (
        "mcp_serve",
        &[
            "supervisor",
            "inflight",
            "validate",
            "hooks",
            "permission",
            "execute",
            "budget",
            "server",
            "mcp",
            "cli",
            "bench",
        ],
    ),
    ("runtime", &["mcp_serve"]),
    ("server", &["mcp_serve"]),
    ("mcp", &["mcp_serve"]),
    ("dispatch", &["mcp_serve"]),
    ("supervisor", &["mcp_serve"]),
    // Worker nodes only execute: the coordinator's decisions (validation, hooks, permission)
    // never cross to them, and the cluster drives no pipeline. The supervisor and the stages
    // reach it only through `execute::Placement`.
    (
        "cluster",
        &[
            "supervisor",
            "dispatch",
            "runtime",
            "server",
            "inflight",
            "emit",
            "permission",
            "validate",
            "hooks",
            "budget",
            "scope",
            "mcp",
            "mcp_serve",
            "client_tools",
            "cli",
            "bench",
        ],
    ),
    ("supervisor", &["cluster"]),
    ("execute", &["cluster"]),
    ("permission", &["cluster"]),
    ("validate", &["cluster"]),
    ("hooks", &["cluster"]),
];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its `#[cfg(test)] mod` (tests may reach
/// anywhere); `None` for a file that is all test code.
fn non_test_code(path: &Path) -> Option<String> {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return None;
    }
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut code = String::new();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("#[cfg(test)]")
            && lines.get(i + 1).is_some_and(|next| next.contains("mod "))
        {
            break;
        }
        let line = line.split("//").next().unwrap_or("");
        code.push_str(line);
        code.push('\n');
    }
    Some(code)
}

/// The top-level modules a piece of code names through `crate::`, including those in a
/// `use crate::{a::…, b::…}` group.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = ident(item.trim());
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// Each top-level module and the other top-level modules its non-test code imports.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let root = src();
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        if top == "main" || top == "lib" {
            continue;
        }
        let Some(code) = non_test_code(&file) else {
            continue;
        };
        let entry = map.entry(top.clone()).or_default();
        entry.extend(named_modules(&code).into_iter().filter(|m| *m != top));
    }
    map
}

#[test]
fn every_module_named_in_a_rule_exists() {
    let map = imports();
    let named = LEAVES
        .iter()
        .chain(ONLY.iter().map(|(m, _)| m))
        .chain(NEVER.iter().map(|(m, _)| m));
    for module in named {
        assert!(map.contains_key(*module), "no module {module} in src/");
    }
}

#[test]
fn leaves_import_nothing_of_the_crate() {
    let map = imports();
    for module in LEAVES {
        let found = &map[*module];
        assert!(found.is_empty(), "{module} imports {found:?}");
    }
}

#[test]
fn layers_import_only_what_they_may() {
    let map = imports();
    for (module, allowed) in ONLY {
        let extra: Vec<_> = map[*module]
            .iter()
            .filter(|m| !allowed.contains(&m.as_str()))
            .collect();
        assert!(extra.is_empty(), "{module} imports {extra:?}");
    }
}

#[test]
fn no_module_imports_what_it_never_may() {
    let map = imports();
    for (module, forbidden) in NEVER {
        let found: Vec<_> = map[*module]
            .iter()
            .filter(|m| forbidden.contains(&m.as_str()))
            .collect();
        assert!(found.is_empty(), "{module} imports {found:?}");
    }
}

#[test]
fn the_scanner_sees_groups_and_paths() {
    let code = "use crate::{call::Input, tool::Tool};\nlet x = crate::paths::normalize(p);\n";
    let found: Vec<_> = named_modules(code).into_iter().collect();
    assert_eq!(found, ["call", "paths", "tool"]);
}

/// The longest a source file under `src/` may be: a file that grows past it holds more than one
/// idea and is split. Test-only files (a `tests.rs`, or any file in a `tests/` folder under
/// `src/`) are exempt: table tests grow with their tables.
const MAX_LINES: usize = 800;

/// Whether a file under `src/` holds only test code.
fn test_only(rel: &Path) -> bool {
    rel.file_name().is_some_and(|n| n == "tests.rs")
        || rel
            .parent()
            .is_some_and(|dir| dir.components().any(|c| c.as_os_str() == "tests"))
}

#[test]
fn no_source_file_is_over_800_lines() {
    let root = src();
    let mut files = Vec::new();
    walk(&root, &mut files);
    assert!(files.len() > 50, "the walk found the sources");
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let rel = file.strip_prefix(&root).unwrap();
            if test_only(rel) {
                return None;
            }
            let lines = std::fs::read_to_string(file).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("src/{} ({lines} lines)", rel.display()))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines, split them: {}",
        long.join(", ")
    );
}

/// The most lines a function outside tests may span, its signature and closing brace included.
const MAX_FN_LINES: usize = 120;

/// The functions of `text` (before its `#[cfg(test)]` module) longer than `MAX_FN_LINES`, as
/// `name (N lines)`: from a line that starts a `fn` to the first `}` line at its indent.
fn long_functions(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].starts_with("#[cfg(test)]")
                && lines.get(i + 1).is_some_and(|next| next.contains("mod "))
        })
        .unwrap_or(lines.len());
    let mut long = Vec::new();
    for (i, line) in lines[..end].iter().enumerate() {
        let code = line.trim_start();
        let indent = line.len() - code.len();
        let Some(name) = code
            .split_once("fn ")
            .filter(|(before, _)| {
                before.split_whitespace().all(|w| {
                    ["pub", "async", "const", "unsafe"].contains(&w) || w.starts_with("pub(")
                })
            })
            .and_then(|(_, rest)| rest.split(['(', '<']).next())
        else {
            continue;
        };
        // A declaration without a body (a trait's) ends at `;` before any `{`.
        let Some(open) = (i..end).find(|&j| lines[j].trim_end().ends_with(['{', ';'])) else {
            continue;
        };
        if lines[open].trim_end().ends_with(';') {
            continue;
        }
        let close = (open + 1..end).find(|&j| {
            let l = lines[j];
            l.len() > indent && l[..indent].trim().is_empty() && l[indent..].starts_with('}')
        });
        let span = close.map_or(end, |c| c + 1) - i;
        if span > MAX_FN_LINES {
            long.push(format!("{name} ({span} lines)"));
        }
    }
    long
}

#[test]
fn no_function_is_over_120_lines() {
    let root = src();
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut long: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let rel = file.strip_prefix(&root).unwrap().to_path_buf();
            let found = if test_only(&rel) {
                Vec::new()
            } else {
                long_functions(&std::fs::read_to_string(file).unwrap())
            };
            found
                .into_iter()
                .map(move |f| format!("src/{}: {f}", rel.display()))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "over {MAX_FN_LINES} lines, split them: {}",
        long.join(", ")
    );
}

#[test]
fn the_function_scanner_measures_bodies_only() {
    let body = "    x();\n".repeat(MAX_FN_LINES);
    let long = format!("pub(crate) async fn big(a: u8) -> u8 {{\n{body}}}\n");
    assert_eq!(
        long_functions(&long),
        vec![format!("big ({} lines)", MAX_FN_LINES + 2)]
    );
    let short = format!("fn small() {{\n    x();\n}}\n    fn decl(&self);\n{long}");
    assert_eq!(long_functions(&short).len(), 1);
    let tested = format!("fn a() {{}}\n#[cfg(test)]\nmod tests {{\n{long}}}\n");
    assert!(long_functions(&tested).is_empty());
    // `fn` inside a line of code is no function's start.
    assert!(long_functions(&format!("let f = |x| {{\n{body}}};\n")).is_empty());
}

#[test]
fn test_only_files_are_told_apart() {
    for (path, exempt) in [
        ("protocol/tests.rs", true),
        ("permission/tests/paths.rs", true),
        ("shell/programs/tests.rs", true),
        ("protocol.rs", false),
        ("hooks/config/mod.rs", false),
        ("tests_helper.rs", false),
    ] {
        assert_eq!(test_only(Path::new(path)), exempt, "{path}");
    }
}

/// Files outside `src/` that still name a module of the crate rather than a name at its root,
/// and why. The list only shrinks: a file on it that no longer reaches in fails the check too.
const REACHING_IN: &[(&str, &str)] = &[];

/// The names the crate root re-exports (`pub use …;` in src/lib.rs), by the name they have there.
fn root_names() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut names = BTreeSet::new();
    for item in lib.split("pub use ").skip(1) {
        let item = item.split(';').next().unwrap_or("");
        let item = match (item.find('{'), item.rfind('}')) {
            (Some(open), Some(close)) => &item[open + 1..close],
            _ => item.rsplit("::").next().unwrap_or(""),
        };
        for name in item.split(',') {
            let name = name.rsplit(" as ").next().unwrap_or("").trim();
            if !name.is_empty() {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// The code of a file without comments and without the insides of string literals.
fn code_only(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        let (mut in_string, mut escaped) = (false, false);
        let mut prev = ' ';
        for c in line.chars() {
            if in_string {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            if c == '/' && prev == '/' {
                code.pop();
                break;
            }
            in_string = c == '"';
            code.push(c);
            prev = c;
        }
        code.push('\n');
    }
    code
}

/// The first path segments that code names through `toolrt::` and that are not root names
/// (modules, mostly), including those inside a `use toolrt::{…}` group.
fn reached_in(code: &str, root: &BTreeSet<String>) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("toolrt::") {
        let rest = &code[at + "toolrt::".len()..];
        let names: Vec<String> = match rest.strip_prefix('{') {
            Some(group) => {
                // Only the group's top level: a nested `a::{b, c}` is reached through `a`.
                let (mut depth, mut item, mut items) = (0, String::new(), Vec::new());
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => items.push(std::mem::take(&mut item)),
                        _ if depth == 0 => item.push(c),
                        _ => {}
                    }
                }
                items.push(item);
                items.iter().map(|i| ident(i.trim())).collect()
            }
            None => vec![ident(rest)],
        };
        out.extend(
            names
                .into_iter()
                .filter(|n| !n.is_empty() && !root.contains(n)),
        );
    }
    out
}

#[test]
fn outside_src_only_the_public_api_is_used() {
    let root = root_names();
    assert!(
        ["Runtime", "Config", "Tool", "ClientMessage", "AskPolicy"]
            .iter()
            .all(|n| root.contains(*n)),
        "the root's names were read: {root:?}"
    );
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["tests", "benches", "examples"] {
        walk(&manifest.join(dir), &mut files);
    }
    // Fixtures are other programs' files (an MCP server's virtualenv), not users of the crate.
    files.retain(|f| !f.starts_with(manifest.join("tests/fixtures")));
    assert!(files.len() > 50, "the walk found the tests");
    let mut problems = Vec::new();
    let mut still_listed: BTreeSet<&str> = REACHING_IN.iter().map(|(f, _)| *f).collect();
    for file in &files {
        let rel = file.strip_prefix(&manifest).unwrap().to_string_lossy();
        let found = reached_in(&code_only(&std::fs::read_to_string(file).unwrap()), &root);
        let listed = still_listed.remove(rel.as_ref());
        match (found.is_empty(), listed) {
            (false, false) => problems.push(format!(
                "{rel} names {found:?}: use the names at the crate root (re-export what an \
                 embedder needs in src/lib.rs) or test it beside the code"
            )),
            (true, true) => problems.push(format!(
                "{rel} uses only the public API now: take it off REACHING_IN"
            )),
            _ => {}
        }
    }
    problems.extend(
        still_listed
            .iter()
            .map(|f| format!("{f} is on REACHING_IN but not found")),
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_public_api_scanner_sees_groups_paths_and_skips_strings() {
    let root: BTreeSet<String> = ["Config", "Runtime", "Tool"].map(String::from).into();
    for (code, want) in [
        ("use toolrt::{Config, Runtime};", &[][..]),
        ("let r = toolrt::Runtime::start(c);", &[]),
        (
            "use toolrt::{Tool, hooks::{HookRunner, IfFilter}};",
            &["hooks"],
        ),
        ("use toolrt::permission::Mode;", &["permission"]),
        (
            "use toolrt::budget;\nlet x = toolrt::tools::noop::Noop;",
            &["budget", "tools"],
        ),
        ("let log = \"warn,toolrt::dispatch=debug\";", &[]),
        ("// see toolrt::dispatch::Full", &[]),
    ] {
        let found: Vec<String> = reached_in(&code_only(code), &root).into_iter().collect();
        assert_eq!(found, want, "{code}");
    }
}
