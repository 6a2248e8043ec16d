use super::sed::sed_script_ok;
use super::*;

fn words(s: &str) -> Vec<Word> {
    s.split(' ')
        .filter(|w| !w.is_empty())
        .map(Word::plain)
        .collect()
}

fn ro(cmd: &str) -> Option<Outcome> {
    let w = words(cmd);
    read_only(&w[0].text, &w[1..], &Cwd::Session)
}

#[test]
fn read_only_understood_table() {
    for (cmd, ok) in [
        ("ls -la", true),
        ("ls -la --color=auto src", true),
        ("ls --colour", false),
        ("ls --recur", false),
        ("cat -n a", true),
        ("head -n 5 a", true),
        ("head -5 a", true),
        ("head -n5 a", true),
        ("tail -f a", true),
        ("tail --follow=name a", true),
        ("grep -rn x src", true),
        ("grep -d recurse x .", true),
        ("grep -d frob x .", false),
        ("grep --open x", false),
        ("grep -A 3 -B2 x a", true),
        ("wc -l a", true),
        ("wc --files0-from=list", false),
        ("diff -u a b", true),
        ("diff -r a b", true),
        ("stat -c %s a", true),
        ("du -sh .", true),
        ("du --files0-from=x", false),
        ("find . -name *.rs", false),
        // a match named `-delete`, `!` or `--from-file=x` would be read as an option
        ("find *e", false),
        ("find ?", false),
        ("find ./*e", true),
        ("diff *", false),
        ("diff -- *", true),
        ("grep x *.rs", false),
        ("grep x -- *.rs", true),
        ("grep -- x *.rs", true),
        ("cat *.rs", true),
        ("ls *", true),
        ("find . -name x -type f", true),
        ("find . -delete", true),
        ("find . -exec cat {} ;", true),
        ("find . -fprint out", true),
        ("find . -frobnicate", false),
        ("pwd -P", true),
        ("pwd -x", false),
        ("echo -n hi", true),
        ("echo *", false),
        ("cd -", false),
        ("which -a cargo", true),
    ] {
        let o = ro(cmd).expect(cmd);
        assert_eq!(o.problems.is_empty(), ok, "{cmd}: {:?}", o.problems);
    }
    for cmd in [
        "find . -delete",
        "find . -exec cat {} ;",
        "find . -fprint out",
    ] {
        assert!(ro(cmd).unwrap().not_read_only.is_some(), "{cmd}");
    }
    assert!(ro("uniq a").is_none());
    assert!(ro("lsof").is_none());
}

#[test]
fn read_only_effects() {
    let o = ro("grep -f pats.txt x a b").unwrap();
    let reads: Vec<&str> = o.effects.reads.iter().map(|t| t.path.as_str()).collect();
    assert_eq!(reads, ["x", "a", "b", "pats.txt"]);
    let o = ro("grep pat a").unwrap();
    let reads: Vec<&str> = o.effects.reads.iter().map(|t| t.path.as_str()).collect();
    assert_eq!(reads, ["a"]);
    let o = ro("grep -r pat").unwrap();
    assert_eq!(o.effects.trees[0].path, ".");
    let o = ro("diff --from-file=.env a").unwrap();
    assert!(o.effects.reads.iter().any(|t| t.path == ".env"));
    let o = ro("ls *.rs").unwrap();
    assert!(o.problems.is_empty() && o.effects.lists[0].glob);
}

#[test]
fn sort_table() {
    let paths = |t: &[Target]| -> Vec<String> { t.iter().map(|t| t.path.clone()).collect() };
    // (command, understood, reads, output files, runs code toolrt cannot see)
    for (cmd, ok, reads, outputs, hidden) in [
        ("sort a", true, vec!["a"], vec![], false),
        ("sort", true, vec![], vec![], false),
        ("sort -", true, vec![], vec![], false),
        ("sort -u a b", true, vec!["a", "b"], vec![], false),
        ("sort -rn -k2 a", true, vec!["a"], vec![], false),
        ("sort -t , -k3,3n a.csv", true, vec!["a.csv"], vec![], false),
        ("sort -t, -k 2 a", true, vec!["a"], vec![], false),
        ("sort -hV --stable a", true, vec!["a"], vec![], false),
        (
            "sort --sort=version -S 10M --parallel=2 a",
            true,
            vec!["a"],
            vec![],
            false,
        ),
        ("sort -c a", true, vec!["a"], vec![], false),
        ("sort --check=quiet a", true, vec!["a"], vec![], false),
        ("sort a -r", true, vec!["a"], vec![], false),
        ("sort -- *.txt", true, vec!["*.txt"], vec![], false),
        // a match named `-o.bashrc` would be an option
        ("sort *.txt", false, vec!["*.txt"], vec![], false),
        ("sort ./*.txt", true, vec!["./*.txt"], vec![], false),
        // unique prefixes resolve as getopt_long resolves them
        ("sort --rev --uniq a", true, vec!["a"], vec![], false),
        ("sort --num a", true, vec!["a"], vec![], false),
        // ambiguous: --ra (random-sort, random-source), --d (debug, dictionary-order)
        ("sort --ra a", false, vec!["a"], vec![], false),
        ("sort --d a", false, vec!["a"], vec![], false),
        ("sort --frobnicate a", false, vec!["a"], vec![], false),
        ("sort -y a", false, vec!["a"], vec![], false),
        ("sort -1 a", false, vec!["a"], vec![], false),
        // the output file, every spelling
        ("sort -o out a", true, vec!["a"], vec!["out"], false),
        ("sort -oout a", true, vec!["a"], vec!["out"], false),
        ("sort -ro out a", true, vec!["a"], vec!["out"], false),
        ("sort -roout a", true, vec!["a"], vec!["out"], false),
        ("sort --output out a", true, vec!["a"], vec!["out"], false),
        ("sort --output=out a", true, vec!["a"], vec!["out"], false),
        ("sort --out=out a", true, vec!["a"], vec!["out"], false),
        ("sort --o out a", true, vec!["a"], vec!["out"], false),
        ("sort a -o a", true, vec!["a"], vec!["a"], false),
        ("sort -o - a", true, vec!["a"], vec!["-"], false),
        (
            "sort -o ~/.bashrc a",
            true,
            vec!["a"],
            vec!["~/.bashrc"],
            false,
        ),
        (
            "sort -o~/.bashrc a",
            true,
            vec!["a"],
            vec!["./~/.bashrc"],
            false,
        ),
        ("sort --output=~/x a", true, vec!["a"], vec!["./~/x"], false),
        ("sort -o *.txt a", false, vec!["a"], vec!["*.txt"], false),
        // temporary files
        (
            "sort -T tmp a",
            true,
            vec!["a"],
            vec!["tmp/sortXXXXXX"],
            false,
        ),
        (
            "sort --temporary-directory=/x a",
            true,
            vec!["a"],
            vec!["/x/sortXXXXXX"],
            false,
        ),
        (
            "sort --temp /x a",
            true,
            vec!["a"],
            vec!["/x/sortXXXXXX"],
            false,
        ),
        // files read through options
        (
            "sort --random-source=.env -R a",
            true,
            vec!["a", ".env"],
            vec![],
            false,
        ),
        (
            "sort --random-source - a",
            true,
            vec!["a", "-"],
            vec![],
            false,
        ),
        (
            "sort --files0-from=list",
            false,
            vec!["list", "(the files named in list)"],
            vec![],
            false,
        ),
        (
            "sort --files0=list",
            false,
            vec!["list", "(the files named in list)"],
            vec![],
            false,
        ),
        // a compression program runs on sort's temporary data
        (
            "sort --compress-program=sh a",
            true,
            vec!["a"],
            vec![],
            true,
        ),
        ("sort --compress=gzip a", true, vec!["a"], vec![], true),
    ] {
        let o = ro(cmd).expect(cmd);
        assert_eq!(o.problems.is_empty(), ok, "{cmd}: {:?}", o.problems);
        assert_eq!(paths(&o.effects.reads), reads, "{cmd}");
        assert_eq!(paths(&o.effects.redirects), outputs, "{cmd}");
        assert!(o.effects.writes.is_empty(), "{cmd}");
        assert_eq!(o.hidden.is_some(), hidden, "{cmd}");
        assert_eq!(o.not_read_only.is_some(), hidden, "{cmd}");
    }
    assert_eq!(
        ro("sort --compress-program=gzip a").unwrap().readings,
        ["gzip"]
    );
}

#[test]
fn mv_sources_are_moves() {
    let w = words("mv -t dir a b");
    let o = file_edit("mv", &w[1..], &Cwd::Session).unwrap();
    let moved: Vec<&str> = o.effects.moves.iter().map(|t| t.path.as_str()).collect();
    assert_eq!(moved, ["a", "b"]);
    let w = words("cp -r a b");
    assert!(
        file_edit("cp", &w[1..], &Cwd::Session)
            .unwrap()
            .effects
            .moves
            .is_empty()
    );
}

#[test]
fn file_edit_table() {
    for (cmd, ok, writes) in [
        ("mkdir -p a/b", true, vec!["a/b"]),
        ("touch a", true, vec!["a"]),
        ("rm -rf build", true, vec!["build"]),
        ("cp a b", true, vec!["b"]),
        ("cp -t dir a b", true, vec!["dir"]),
        ("cp --target-directory=dir a", true, vec!["dir"]),
        ("mv a b", true, vec!["b", "a"]),
        ("mv -S /x a b", false, vec!["b/x", "b/a/x", "b", "a"]),
        // a backup renames the existing destination: DEST+SUFFIX, or DIR/NAME+SUFFIX
        (
            "cp -b -S rc x .bash",
            true,
            vec![".bashrc", ".bash/xrc", ".bash"],
        ),
        ("cp -bS.txt x s", true, vec!["s.txt", "s/x.txt", "s"]),
        (
            "mv --suffix=rc x .bash",
            true,
            vec![".bashrc", ".bash/xrc", ".bash", "x"],
        ),
        ("cp -b x y", true, vec!["y~", "y/x~", "y"]),
        ("cp -S rc -t d x", true, vec!["drc", "d/xrc", "d"]),
        ("sed -i s/a/b/ f", true, vec!["f"]),
        ("sed -Ei s/a/b/ f", true, vec!["f"]),
        ("sed -iE s/a/b/ f", true, vec!["f"]),
        ("sed -i.bak s/a/b/ f", true, vec!["f"]),
        ("sed -i../x s/a/b/ f", false, vec!["f"]),
        ("sed s/a/b/e f", false, vec![]),
        (
            "sed s/a/b/w f",
            false,
            vec!["(a file the sed script names)"],
        ),
        ("sed 1e f", false, vec![]),
        ("sed -n 1p f", true, vec![]),
        ("sed w.out f", false, vec!["(a file the sed script names)"]),
        (
            "sed -e p -e w.x f",
            false,
            vec!["(a file the sed script names)"],
        ),
        ("sed --sandbox s/a/b/e f", true, vec![]),
    ] {
        let w = words(cmd);
        let o = file_edit(&w[0].text, &w[1..], &Cwd::Session).unwrap();
        assert_eq!(o.problems.is_empty(), ok, "{cmd}: {:?}", o.problems);
        let got: Vec<&str> = o.effects.writes.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(got, writes, "{cmd}");
    }
}

#[test]
fn sed_scripts() {
    for (s, ok) in [
        ("s/a/b/g", true),
        ("1,5d", true),
        ("/x/,/y/{s/a/b/;p}", true),
        ("$!N;P;D", true),
        ("s|a|b|2", true),
        ("s/a/b/e", false),
        ("s/a/b/w out", false),
        ("w out", false),
        ("1r /etc/passwd", false),
        ("e rm x", false),
        ("y/abc/xyz/", true),
        ("a hello", true),
        ("s/a\\/b/c/", true),
    ] {
        assert_eq!(sed_script_ok(s).is_ok(), ok, "{s}");
    }
}

/// Files written under names a program makes from its operands.
#[test]
fn derived_writes_table() {
    for (cmd, writes, unseen) in [
        ("gzip a", vec!["a.gz"], false),
        ("gzip -S .txt secret", vec!["secret.txt"], false),
        ("gzip -c a", vec![], false),
        ("gunzip .bashrc.gz", vec![".bashrc"], false),
        ("gzip -dk x.tgz", vec!["x.tar"], false),
        ("gunzip -S rc .bashrc", vec![".bash"], false),
        ("gzip -d --suffix=x .bashrcx", vec![".bashrc"], false),
        ("gunzip -N a.gz", vec!["a"], true),
        ("gzip -r dir", vec!["dir.gz"], true),
        ("xz -d a.xz", vec!["a"], false),
        ("unzstd a.zst", vec!["a"], false),
        ("zstd -d a.zst -o b", vec!["a"], false),
        ("bzip2 -d a", vec!["a.out"], false),
        ("bunzip2 a.bz2", vec!["a"], false),
        ("patch -p1", vec![], true),
        ("patch -i x.diff", vec![], true),
        ("patch --dir sub a x.diff", vec![], true),
        ("patch --frob a", vec![], true),
        ("patch --dry-run", vec![], false),
        ("patch a x.diff", vec!["a.orig", "a.rej", "a"], false),
        ("patch -o out", vec!["out.orig", "out.rej", "out"], false),
        (
            "patch -z rc .bash p",
            vec![".bash.orig", ".bash.rej", ".bashrc", ".bash"],
            false,
        ),
        (
            "ln -sbS rc x .bash",
            vec![
                "xrc",
                "x/xrc",
                "x/.bashrc",
                ".bashrc",
                ".bash/xrc",
                ".bash/.bashrc",
            ],
            false,
        ),
        ("cat a", vec![], false),
    ] {
        let w = words(cmd);
        let d = derived(&w[0].text, &w[1..], &Cwd::Session);
        let got: Vec<&str> = d.writes.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(got, writes, "{cmd}");
        assert_eq!(d.unseen.is_some(), unseen, "{cmd}: {:?}", d.unseen);
    }
}
