use super::*;

fn words(s: &str) -> Vec<Word> {
    s.split(' ')
        .filter(|w| !w.is_empty())
        .map(Word::plain)
        .collect()
}

fn ro(cmd: &str) -> Option<ReadOnly> {
    let w = words(cmd);
    let g = globals(&w);
    let sub = g.sub?;
    read_only(&w[sub].text, &w[sub + 1..], &Cwd::Session).map(|mut r| {
        r.problems.extend(g.problems);
        r
    })
}

#[test]
fn read_only_table() {
    for (cmd, ok) in [
        ("status", true),
        ("status -sb", true),
        ("status --porcelain=v1", true),
        ("log --oneline -n 5", true),
        ("log --oneline -5", true),
        ("log -p --stat", true),
        ("log --format=%h%x20%s", true),
        ("log --output=x", false),
        ("log --ext-diff", false),
        ("diff", true),
        ("diff -O/dev/null", true),
        ("diff --cached --stat", true),
        ("diff --no-index a b", true),
        ("diff --output=x", false),
        ("diff --out=x", false),
        ("show HEAD:README.md", true),
        ("show --stat HEAD", true),
        ("branch", true),
        ("branch -a", true),
        ("branch --format=%(refname)", true),
        ("branch -vv", true),
        ("tag", true),
        ("tag -l v1.0", true),
        ("tag -l v1*", false),
        ("rev-parse --show-toplevel", true),
        ("rev-parse --abbrev-ref HEAD", true),
        ("ls-files -m", true),
        ("blame -L 1,5 a.rs", true),
        ("grep -n foo", true),
        ("grep --open-files-in-pager foo", false),
        ("grep -Ofoo foo", false),
        ("config --get user.name", true),
        ("config user.name", true),
        ("stash list", true),
        ("remote -v", true),
        ("-P log", true),
        ("--no-pager diff", true),
        ("-C sub status", true),
        ("-c core.pager=x log", false),
        ("--git-dir=x log", false),
    ] {
        let got = ro(cmd).unwrap_or_else(|| panic!("{cmd} should be read-only"));
        assert_eq!(got.problems.is_empty(), ok, "{cmd}: {:?}", got.problems);
    }
    for cmd in [
        "push",
        "commit -m x",
        "branch -D x",
        "branch newbranch",
        "tag v1",
        "stash",
        "stash pop",
        "config user.name x",
        "remote add o u",
        "reflog expire",
        "checkout x",
        "fetch",
    ] {
        assert!(ro(cmd).is_none(), "{cmd} is not read-only");
    }
}

#[test]
fn content_and_paths() {
    let r = ro("show HEAD:.env").unwrap();
    assert!(
        r.effects
            .reads
            .iter()
            .any(|t| t.path == ".env" && t.repo_top)
    );
    assert!(ro("log -p").unwrap().shows_content);
    assert!(!ro("log --oneline").unwrap().shows_content);
    assert!(ro("show HEAD").unwrap().shows_content);
    assert!(!ro("show --stat HEAD").unwrap().shows_content);
    // A pickaxe tells whether a file holds a guess; a blob is a file's content.
    for cmd in [
        "log -S hunter2 --oneline",
        "log -Ghunt --oneline",
        "log --find-object=HEAD:.env",
        "diff --stat -S x",
        "show --stat -G x HEAD",
        "config --blob HEAD:.env --list",
        "config --blob=abc123 --get a.b",
    ] {
        assert!(ro(cmd).expect(cmd).shows_content, "{cmd}");
    }
    assert!(!ro("config --list").unwrap().shows_content);
    let r = ro("diff --no-index .env /dev/null").unwrap();
    assert!(r.effects.reads.iter().any(|t| t.path == ".env"));
    let r = ro("blame .env").unwrap();
    assert!(
        r.effects
            .reads
            .iter()
            .any(|t| t.path == ".env" && !t.repo_top)
    );
}

#[test]
fn normalised_views() {
    for (cmd, want) in [
        ("git -C /x push origin", "git push origin"),
        ("git --no-pager push", "git push"),
        ("git -c alias.p=push p", "git push"),
        ("git -P -c a.b=c push -f", "git push -f"),
        ("git -C x push", "git push"),
    ] {
        let w = words(cmd);
        let g = globals(&w[1..]);
        let (view, _) = normalised(&w[1..], &g);
        assert_eq!(view.as_deref(), Some(want), "{cmd}");
    }
    let w = words("git -c alias.x=!rm x");
    let g = globals(&w[1..]);
    let (_, scripts) = normalised(&w[1..], &g);
    assert!(scripts.contains(&"rm".to_string()));
}
