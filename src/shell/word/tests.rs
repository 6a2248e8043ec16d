use super::*;

struct Sink(Vec<String>);
impl Nested for Sink {
    fn substitution(&mut self, script: &str) {
        self.0.push(script.to_string());
    }
    fn assigns(&mut self, _name: &str) {}
}

fn w(raw: &str) -> Word {
    analyse(raw, &mut Sink(Vec::new()))
}

#[test]
fn quote_removal_table() {
    for (raw, text, exact) in [
        ("rm", "rm", true),
        ("r''m", "rm", true),
        ("\\rm", "rm", true),
        ("'rm'", "rm", true),
        ("\"rm\"", "rm", true),
        ("$'\\x72m'", "rm", true),
        ("$'\\162m'", "rm", true),
        ("$'a\\tb'", "a\tb", true),
        ("~/x", "~/x", true),
        ("~root/x", "~root/x", false),
        ("$X", "$X", false),
        ("\"$X\"", "$X", false),
        ("$(echo rm)", "$(echo rm)", false),
        ("a{b,c}", "a{b,c}", false),
        ("'a{b,c}'", "a{b,c}", true),
        ("{}", "{}", true),
        ("x{1..3}", "x{1..3}", false),
    ] {
        let got = w(raw);
        assert_eq!((got.text.as_str(), got.exact), (text, exact), "{raw}");
    }
}

#[test]
fn hidden_code_table() {
    for (raw, hidden) in [
        ("$((1+2))", false),
        ("$((x))", true),
        ("$[x+1]", true),
        ("${x@P}", true),
        ("${x@U}", false),
        ("${!x}", true),
        ("${a[i]}", true),
        ("${a[0]}", false),
        ("${x:1:2}", false),
        ("${x:i}", true),
        ("${x:-$((y))}", true),
        ("${x:-y}", false),
        ("\"${x@P}\"", true),
    ] {
        assert_eq!(w(raw).hidden.is_some(), hidden, "{raw}");
    }
}

#[test]
fn globs_and_braces() {
    assert!(w("*.rs").glob && w("*.rs").exact);
    assert!(!w("'*.rs'").glob);
    assert!(w("a[bc]").glob);
    assert!(!w("[").glob);
    let b = w("{rm,-rf,x}");
    assert!(b.brace);
    assert_eq!(
        expand_braces(&b.text, &b.quoted, 64),
        vec!["rm", "-rf", "x"]
    );
    let b = w("x{a,b}{1..2}");
    assert_eq!(
        expand_braces(&b.text, &b.quoted, 64),
        vec!["xa1", "xa2", "xb1", "xb2"]
    );
    let b = w("{x,}");
    assert_eq!(expand_braces(&b.text, &b.quoted, 64), vec!["x", ""]);
}

#[test]
fn heredoc_cat_is_literal() {
    let mut sink = Sink(Vec::new());
    let got = analyse("\"$(cat <<'EOF'\nfix: a\n\nbody\nEOF\n)\"", &mut sink);
    assert!(got.exact, "{got:?}");
    assert_eq!(got.text, "fix: a\n\nbody");
    assert_eq!(sink.0.len(), 1);
    let got = analyse("\"$(cat <<EOF\n$X\nEOF\n)\"", &mut Sink(Vec::new()));
    assert!(!got.exact);
}
