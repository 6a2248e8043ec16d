//! The docs match the binary: every example in README.md and docs/ that can run is run through
//! the real `toolrt` and compared with what the docs show (everything deterministic: timings
//! are masked), every section reference and link points somewhere, and the docs cite only the
//! repository's own files.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The documents whose examples are checked.
const DOCS: &[&str] = &[
    "README.md",
    "ARCHITECTURE.md",
    "docs/PROTOCOL.md",
    "docs/SEMANTICS.md",
    "docs/TOOLS.md",
    "docs/BENCH.md",
    "docs/FORMATS.md",
];

/// A fenced code block: its info string, its lines, and where it starts.
struct Block {
    lang: String,
    lines: Vec<String>,
    at: String,
}

fn blocks(rel: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in read(rel).lines().enumerate() {
        if let Some(rest) = line.strip_prefix("```") {
            match open.take() {
                Some(block) => out.push(block),
                None => {
                    open = Some(Block {
                        lang: rest.trim().to_string(),
                        lines: Vec::new(),
                        at: format!("{rel}:{}", i + 1),
                    })
                }
            }
        } else if let Some(block) = open.as_mut() {
            block.lines.push(line.to_string());
        }
    }
    assert!(open.is_none(), "{rel}: a code block is not closed");
    out
}

/// Timings differ from run to run: `"duration_ms":3` becomes `"duration_ms":N`.
fn mask(line: &str) -> String {
    let re = regex::Regex::new(r#""duration_ms":\d+"#).unwrap();
    re.replace_all(line, r#""duration_ms":N"#).into_owned()
}

/// One `$ command` of a transcript and the output the docs show for it.
struct Step {
    command: String,
    output: Vec<String>,
}

fn steps(block: &Block) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut continuing = false;
    for line in &block.lines {
        if continuing {
            let step = out.last_mut().unwrap();
            step.command.push('\n');
            step.command.push_str(line);
            continuing = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            out.push(Step {
                command: command.to_string(),
                output: Vec::new(),
            });
            continuing = command.ends_with('\\');
        } else if let Some(step) = out.last_mut() {
            step.output.push(line.clone());
        }
    }
    out
}

/// Runs a shell transcript (`$ command` lines, each followed by its output) in a fresh folder
/// that stands for the docs' `/home/me/proj`. `$ cat FILE` writes the file the docs show;
/// `$ echo $?` checks the previous exit status; any other command runs with `toolrt` (or
/// `target/release/toolrt`) being the binary under test, and its stdout must be what the docs
/// show.
fn run_transcript(block: &Block) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let proj = std::fs::canonicalize(proj).unwrap();
    let here = |s: &str| s.replace("/home/me/proj", proj.to_str().unwrap());
    let mut status: Option<i32> = None;
    let mut ran = 0;
    for step in steps(block) {
        let expected: Vec<String> = step.output.iter().map(|l| mask(&here(l))).collect();
        if let Some(file) = step.command.strip_prefix("cat ") {
            std::fs::write(proj.join(file.trim()), step.output.join("\n") + "\n").unwrap();
            continue;
        }
        if step.command.trim() == "echo $?" {
            let want: i32 = expected[0].trim().parse().unwrap();
            assert_eq!(status, Some(want), "{}: exit status", block.at);
            continue;
        }
        let command = step
            .command
            .replace("target/release/toolrt", bin())
            .replacen(
                "toolrt ",
                &format!("{} ", bin()),
                usize::from(step.command.starts_with("toolrt ")),
            );
        let out = Command::new("sh")
            .arg("-c")
            .arg(&command)
            .current_dir(&proj)
            .env("HOME", dir.path())
            .env_remove("TOOLRT_LOG")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        status = out.status.code();
        let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(mask)
            .collect();
        assert_eq!(
            got,
            expected,
            "{}: `{}` printed something else (stderr: {})",
            block.at,
            step.command,
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    ran
}

#[test]
fn shell_transcripts_print_what_the_docs_show() {
    let mut ran = Vec::new();
    for doc in DOCS {
        for block in blocks(doc) {
            if block.lines.iter().any(|l| l.starts_with("$ ")) {
                let n = run_transcript(&block);
                assert!(n > 0, "{}: nothing ran", block.at);
                ran.push(block.at);
            }
        }
    }
    // The README's request/response example and its `explain` example, at least.
    assert!(
        ran.iter().filter(|at| at.starts_with("README.md")).count() >= 2,
        "{ran:?}"
    );
}

#[test]
fn the_protocol_example_exchange_happens() {
    let mut checked = 0;
    for block in blocks("docs/PROTOCOL.md") {
        let sent: Vec<&str> = block
            .lines
            .iter()
            .filter_map(|l| l.strip_prefix("→ "))
            .collect();
        if sent.is_empty() {
            continue;
        }
        let expected: Vec<String> = block
            .lines
            .iter()
            .filter_map(|l| l.strip_prefix("← "))
            .map(mask)
            .collect();
        // The example reads the repository's own files.
        let mut child = Command::new(bin())
            .arg("serve")
            .current_dir(repo())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        {
            let mut stdin = child.stdin.take().unwrap();
            for line in &sent {
                writeln!(stdin, "{line}").unwrap();
            }
        }
        let out = child.wait_with_output().unwrap();
        let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(mask)
            .collect();
        assert_eq!(got, expected, "{}", block.at);
        checked += 1;
    }
    assert!(checked > 0, "PROTOCOL.md has an example exchange");
}

#[test]
fn the_readme_quickstart_does_what_the_readme_says() {
    let readme = read("README.md");
    assert!(readme.contains("cargo run --release -- run examples/quickstart.ndjson"));
    // "runs a batch that reads, lists and counts the repository's own files, then shows what
    // happens to a write nobody approved, a malformed input and an unknown tool"
    let out = Command::new(bin())
        .args(["run", "examples/quickstart.ndjson"])
        .current_dir(repo())
        .env("HOME", tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let messages: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let outcome = |id: &str| {
        messages
            .iter()
            .find(|m| is_result(m, id))
            .map(|m| m["outcome"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no result {id}"))
    };
    for id in [
        "read-manifest",
        "list-src",
        "count-lines",
        "find-stages",
        "coerced",
    ] {
        assert_eq!(outcome(id), "success", "{id}");
    }
    assert_eq!(outcome("needs-approval"), "denied");
    assert_eq!(outcome("bad-input"), "schema_error");
    assert_eq!(outcome("no-such-tool"), "unavailable");
    assert!(
        !repo().join("scratch.txt").exists(),
        "the unapproved write did not happen"
    );
}

#[test]
fn documented_bench_commands_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for doc in ["README.md", "docs/BENCH.md"] {
        for block in blocks(doc) {
            for line in &block.lines {
                let Some(args) = line.strip_prefix("target/release/toolrt bench") else {
                    continue;
                };
                let args = args.split('#').next().unwrap();
                // Every documented flag, at the hidden smoke sizes; files land in a temp dir.
                let out = Command::new(bin())
                    .arg("bench")
                    .args(args.split_whitespace())
                    .arg("--smoke")
                    .current_dir(dir.path())
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}: {line}: {}",
                    block.at,
                    String::from_utf8_lossy(&out.stderr)
                );
                for file in args.split_whitespace().filter(|a| a.contains('.')) {
                    assert!(dir.path().join(file).exists(), "{}: {file}", block.at);
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 2);
}

#[test]
fn settings_examples_load_without_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for doc in DOCS {
        for block in blocks(doc).into_iter().filter(|b| b.lang == "json") {
            let text = block.lines.join("\n");
            let value: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not JSON: {e}", block.at));
            if !value.is_object() {
                continue;
            }
            let file = dir.path().join("settings.json");
            std::fs::write(&file, &text).unwrap();
            let (code, err) = serve_status(
                dir.path(),
                &["--strict-settings", "--settings", file.to_str().unwrap()],
            );
            assert_eq!(code, Some(0), "{}: {err}", block.at);
            checked += 1;
        }
    }
    assert!(checked >= 2);
}

/// Section numbers of SEMANTICS.md: `1`, `3.4`, …
fn semantics_sections() -> Vec<String> {
    read("docs/SEMANTICS.md")
        .lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| {
            let title = l.trim_start_matches('#').trim();
            let number = title.split_whitespace().next()?.trim_end_matches('.');
            number
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.')
                .then(|| number.to_string())
        })
        .collect()
}

#[test]
fn section_references_and_links_point_somewhere() {
    let sections = semantics_sections();
    assert!(sections.contains(&"3.4".to_string()), "{sections:?}");
    let section = regex::Regex::new(r"§(\d+(?:\.\d+)?)(?:[–-]§?(\d+(?:\.\d+)?))?").unwrap();
    let link = regex::Regex::new(r"\]\(([^)#\s]+)?(?:#([^)\s]+))?\)").unwrap();
    let mut files: Vec<String> = DOCS.iter().map(|d| d.to_string()).collect();
    for dir in ["src", "tests"] {
        for entry in walk(&repo().join(dir)) {
            if entry.extension().is_some_and(|e| e == "rs") {
                files.push(entry.strip_prefix(repo()).unwrap().display().to_string());
            }
        }
    }
    for rel in &files {
        for (i, line) in read(rel).lines().enumerate() {
            // Every `§N` in the repository is a section of SEMANTICS.md.
            for cap in section.captures_iter(line) {
                for n in [cap.get(1), cap.get(2)].into_iter().flatten() {
                    assert!(
                        sections.contains(&n.as_str().to_string()),
                        "{rel}:{}: §{} is no section of SEMANTICS.md: {line}",
                        i + 1,
                        n.as_str()
                    );
                }
            }
        }
        if !rel.ends_with(".md") {
            continue;
        }
        let text = read(rel);
        for cap in link.captures_iter(&text) {
            let base = Path::new(rel).parent().unwrap();
            let target = match cap.get(1) {
                Some(t) if t.as_str().contains("://") => continue,
                Some(t) => base.join(t.as_str()),
                None => PathBuf::from(rel),
            };
            assert!(
                repo().join(&target).exists(),
                "{rel}: link to {}",
                target.display()
            );
            if let Some(anchor) = cap.get(2) {
                let anchors: Vec<String> = read(target.to_str().unwrap())
                    .lines()
                    .filter(|l| l.starts_with('#'))
                    .map(|l| anchor_of(l.trim_start_matches('#').trim()))
                    .collect();
                assert!(
                    anchors.contains(&anchor.as_str().to_string()),
                    "{rel}: no heading #{} in {}",
                    anchor.as_str(),
                    target.display()
                );
            }
        }
    }
}

/// GitHub's anchor for a heading: lower case, spaces to `-`, punctuation dropped.
fn anchor_of(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        // Installed test servers (tests/fixtures/mcp: node_modules, .venv, caches) are not the
        // repository's files.
        let name = entry.file_name();
        let installed = name == "node_modules" || name.to_string_lossy().starts_with('.');
        if path.is_dir() && installed {
            continue;
        }
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn the_docs_cite_only_the_repositorys_own_files() {
    // Spelt in pieces so this file does not cite them either.
    let outside = [
        format!("{}.md", "COMPAT"),
        format!("{}.md", "STYLE"),
        format!("{}/shared", ".."),
        format!("{}/shared", "/work"),
    ];
    let mut files: Vec<PathBuf> = DOCS.iter().map(|d| repo().join(d)).collect();
    for dir in ["src", "tests", "docs", "benches", "examples"] {
        files.extend(walk(&repo().join(dir)));
    }
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for needle in &outside {
            assert!(
                !text.contains(needle.as_str()),
                "{} cites {needle}",
                file.display()
            );
        }
    }
}

/// The README's Python examples run from the repository's root, with the client from
/// `clients/python/src` (standard library only, so no venv is needed) and the binary under
/// test, and print what their `# prints:` comment says.
#[test]
fn readme_python_examples_print_what_they_say() {
    let home = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for block in blocks("README.md")
        .into_iter()
        .filter(|b| b.lang == "python")
    {
        let code = block.lines.join("\n") + "\n";
        let expected: Vec<&str> = block
            .lines
            .iter()
            .filter_map(|l| l.split_once("# prints: ").map(|(_, out)| out))
            .collect();
        assert!(!expected.is_empty(), "{}: no `# prints:` comment", block.at);
        let out = Command::new("python3")
            .arg("-c")
            .arg(&code)
            .current_dir(repo())
            .env("PYTHONPATH", repo().join("clients/python/src"))
            .env("TOOLRT_BIN", bin())
            .env("HOME", home.path())
            .env_remove("TOOLRT_LOG")
            .output()
            .expect("python3 is on PATH (the MCP tests need it too)");
        assert!(
            out.status.success(),
            "{}: {}",
            block.at,
            String::from_utf8_lossy(&out.stderr)
        );
        let got = String::from_utf8_lossy(&out.stdout);
        assert_eq!(got.lines().collect::<Vec<_>>(), expected, "{}", block.at);
        checked += 1;
    }
    assert!(checked >= 1, "README.md has a Python example");
}
