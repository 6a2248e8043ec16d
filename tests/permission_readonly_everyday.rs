//! The read-only commands a developer runs all day stay auto-allowed: in a normal git
//! repository, with no rules at all, each of these runs without a permission request (every
//! request would be answered with deny, so an ask shows up as `denied`).

mod support;

#[path = "common/serve.rs"]
mod serve;

use std::path::Path;
use std::process::Command;

use serde_json::json;
use serve::*;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=dev@example.com", "-c", "user.name=dev"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Everyday commands, one per line as an agent would send them.
const EVERYDAY: &[&str] = &[
    "git status",
    "git status -s",
    "git status --short --branch",
    "git status --porcelain",
    "git log",
    "git log --oneline",
    "git log --oneline -n 5",
    "git log --oneline -5",
    "git log -1 --stat",
    "git log --graph --oneline --all --decorate",
    "git log --format='%h %an %s' -n 3",
    "git log -p -1",
    "git log --since='2 weeks ago' --oneline",
    "git log --author=dev --oneline",
    "git log -- src/main.rs",
    "git -P log --oneline -3",
    "git --no-pager log -1",
    "git log --oneline main..feat-x",
    "git log --oneline -n 3 --format='%h %s'",
    "git diff",
    "git diff --stat",
    "git diff --cached",
    "git diff --staged --name-only",
    "git diff HEAD",
    "git diff HEAD~1 -- src/lib.rs",
    "git diff -O/dev/null",
    "git diff --name-status HEAD~1 HEAD",
    "git diff -U5 src/lib.rs",
    "git diff --word-diff",
    "git diff --check",
    "git show",
    "git show HEAD",
    "git show --stat HEAD",
    "git show HEAD:README.md",
    "git show HEAD~1:src/lib.rs",
    "git show --name-only HEAD",
    "git branch",
    "git branch -a",
    "git branch -vv",
    "git branch --show-current",
    "git branch --format='%(refname:short)'",
    "git branch --list 'feat*'",
    "git branch -r",
    "git tag",
    "git tag -l",
    "git rev-parse HEAD",
    "git rev-parse --abbrev-ref HEAD",
    "git rev-parse --show-toplevel",
    "git rev-parse --short HEAD",
    "git ls-files",
    "git ls-files -m",
    "git ls-files --others --exclude-standard",
    "git ls-tree -r HEAD --name-only",
    "git blame src/lib.rs",
    "git blame -L 1,3 src/lib.rs",
    "git shortlog -sn HEAD",
    "git describe --always",
    "git grep -n fn",
    "git grep -l TODO",
    "git remote -v",
    "git stash list",
    "git config --get core.bare",
    "git config --list",
    "git rev-list --count HEAD",
    "git merge-base HEAD HEAD~1",
    "git cat-file -t HEAD",
    "git worktree list",
    "ls",
    "ls -la",
    "ls -lh src",
    "ls -R docs",
    "ls *.md",
    "ls src/*.rs",
    "cat README.md",
    "cat -n src/main.rs",
    "cat Cargo.toml | grep name",
    "head README.md",
    "head -n 20 src/lib.rs",
    "head -5 src/main.rs",
    "tail -n 20 src/lib.rs",
    "tail -3 README.md",
    "grep -rn 'fn main' src/",
    "grep -rn TODO .",
    "grep -c fn src/lib.rs",
    "grep -i readme README.md",
    "grep -l fn src/*.rs",
    "grep -E 'fn (main|lib)' -r src",
    "grep -v '^#' README.md",
    "grep -rn --include='*.rs' fn .",
    "find . -name '*.rs'",
    "find src -type f",
    "find . -name '*.md' -not -path './.git/*'",
    "find . -maxdepth 2 -type d",
    "find . -newer README.md -type f",
    "wc -l src/*.rs",
    "wc -l README.md",
    "cat src/*.rs | wc -l",
    "echo done",
    "echo \"hello world\"",
    "pwd",
    "which git",
    "diff README.md docs/guide.md",
    "diff -u src/lib.rs src/main.rs",
    "stat README.md",
    "stat -c %s README.md",
    "du -sh .",
    "du -sh src docs",
    "cd src && ls",
    "cd src && cat lib.rs",
    "cd docs && ls -la && cd ..",
    "ls -la 2>/dev/null",
    "git status 2>&1 | head -20",
    "git log --oneline | head -5",
    "find . -name '*.rs' | wc -l",
    "grep -rn fn src | head",
    "cat README.md | head -3",
    "ls && pwd && git status",
    "git diff HEAD~1 --stat | tail -1",
    "ls -la src/ && cat Cargo.toml",
    "find . -type f -name '*.toml' | head -5",
    "git log --oneline -n 5 > /dev/null && echo ok",
    "sort names.txt",
    "sort -u names.txt",
    "sort -r names.txt",
    "sort -n nums.txt",
    "sort -rn nums.txt",
    "sort -t, -k2,2n data.csv",
    "sort -t ',' -k 3 data.csv",
    "sort -h sizes.txt",
    "sort -V versions.txt",
    "sort --unique --ignore-case names.txt",
    "sort -c names.txt || echo unsorted",
    "ls | sort",
    "find . -name '*.rs' | sort",
    "git log --format=%an | sort -u",
    "grep -rn fn src | sort -t: -k2,2n",
    "cat names.txt nums.txt | sort | head -3",
    "wc -l src/*.rs | sort -n",
    "jq . package.json",
    "jq -r .name package.json",
    "jq '.dependencies | keys' package.json",
    "jq -r '.dependencies | to_entries[] | \"\\(.key)@\\(.value)\"' package.json",
    "jq -c '.items[]' data.json",
    "jq '.items | length' data.json",
    "jq -r '.items[] | select(.ok) | .id' data.json",
    "jq '.env' data.json",
    "jq -s 'map(.name)' package.json data.json",
    "jq -n '[1, 2, 3] | add'",
    "jq --arg id b '.items[] | select(.id == $id)' data.json",
    "jq --indent 4 . data.json",
    "jq -e '.items | length > 1' data.json",
    "cat data.json | jq -rc '.items[].id'",
    "jq -r '.items[].id' data.json | sort -r",
    "jq --slurpfile p package.json -n '$p[0].name'",
    "jq -R . names.txt",
];

#[test]
fn everyday_read_only_commands_run_without_asking() {
    assert!(EVERYDAY.len() >= 100, "{} commands", EVERYDAY.len());
    let fx = Fixture::new();
    fx.write(
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n",
    );
    fx.write("README.md", "# demo\nA readme.\n");
    fx.write("docs/guide.md", "# guide\nHow to use it.\n");
    fx.write("src/main.rs", "fn main() {\n    demo::run();\n}\n");
    fx.write("src/lib.rs", "pub fn run() {}\n");
    fx.write(
        "package.json",
        "{\"name\": \"demo\", \"dependencies\": {\"left-pad\": \"1.3.0\"}}\n",
    );
    fx.write(
        "data.json",
        "{\"env\": \"dev\", \"items\": [{\"id\": \"a\", \"ok\": true}, {\"id\": \"b\", \"ok\": false}]}\n",
    );
    fx.write("names.txt", "carol\nalice\nbob\n");
    fx.write("nums.txt", "10\n9\n100\n");
    fx.write("data.csv", "a,3,x\nb,1,y\nc,2,z\n");
    fx.write("sizes.txt", "1K\n2M\n512\n");
    fx.write("versions.txt", "1.10\n1.9\n1.2\n");
    git(&fx.cwd, &["init", "-q", "-b", "main"]);
    git(&fx.cwd, &["add", "-A"]);
    git(&fx.cwd, &["commit", "-qm", "first"]);
    fx.write(
        "src/lib.rs",
        "// TODO: more\npub fn run() {}\npub fn lib() {}\n",
    );
    git(&fx.cwd, &["commit", "-qam", "second"]);
    git(&fx.cwd, &["branch", "feat-x"]);
    // A change in the work tree, as during real work.
    fx.write(
        "src/main.rs",
        "fn main() {\n    demo::run();\n    demo::lib();\n}\n",
    );
    let s = fx.settings(json!({}));
    let calls: Vec<_> = EVERYDAY
        .iter()
        .enumerate()
        .map(|(i, c)| bash(&format!("e{i}"), c))
        .collect();
    let run = fx.run(&s, &[], &calls, "deny");
    let mut bad = Vec::new();
    for (i, c) in EVERYDAY.iter().enumerate() {
        let id = format!("e{i}");
        if run.asked(&id) || run.outcome(&id) == "denied" {
            bad.push(format!("{c:?}: {} {}", run.outcome(&id), run.content(&id)));
        }
    }
    assert!(bad.is_empty(), "asked for:\n{}", bad.join("\n"));
    // And they really ran.
    assert!(run.content("e0").contains("main"), "{}", run.content("e0"));
    let ran = |cmd: &str| {
        let i = EVERYDAY.iter().position(|c| *c == cmd).expect(cmd);
        run.content(&format!("e{i}"))
    };
    assert!(
        ran("sort -n nums.txt").starts_with("9\n10\n100"),
        "{}",
        ran("sort -n nums.txt")
    );
    assert!(
        ran("jq -r .name package.json").starts_with("demo"),
        "{}",
        ran("jq -r .name package.json")
    );
}
