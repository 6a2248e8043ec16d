//! Read's own limits and the output budget agree: a Read is never cut or moved to a file by the
//! budget, a Read that stops early says where to read on, and the `limit` it suggests fits.

mod support;

use serde_json::{Value, json};
use support::*;

fn text(v: &Value) -> &str {
    v["content"].as_str().unwrap_or("")
}

/// The offset a notice says to read on from.
fn read_on(content: &str) -> Option<u64> {
    let at = content.find("Read on with offset=")? + "Read on with offset=".len();
    content[at..].split(' ').next()?.parse().ok()
}

fn assert_inline_success(r: &Value, budget: usize) {
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(
        r.get("output_file").is_none(),
        "a Read was moved to a file: {r}"
    );
    assert!(
        text(r).chars().count() <= budget,
        "over {budget}: {}",
        text(r).len()
    );
}

#[test]
fn a_read_within_its_limit_is_returned_inline() {
    let sb = Sandbox::new();
    // 1,500 lines of 22 characters: 45,000 characters once numbered, under 2,000 lines.
    let body: String = (1..=1500)
        .map(|i| format!("{i:>5} {}\n", "z".repeat(16)))
        .collect();
    sb.write("mid.txt", &body);
    let mut server = sb.serve(&[]);
    server.tool_use("r", "Read", json!({"file_path": "mid.txt"}));
    let r = server.result("r");
    assert_inline_success(&r, 50_000);
    assert!(
        text(&r).contains("  1500\t 1500 "),
        "the last line is there"
    );
    assert!(read_on(text(&r)).is_none());
}

#[test]
fn reading_on_from_each_notice_walks_the_whole_file_inline() {
    let sb = Sandbox::new();
    // 400 lines of about 1,000 characters: 400,000 characters, well over one Read.
    let body: String = (1..=400)
        .map(|i| format!("L{i} {}\n", "w".repeat(995)))
        .collect();
    sb.write("wide.txt", &body);
    let mut server = sb.serve(&[]);
    let mut offset: Option<u64> = None;
    let mut seen = 0;
    for round in 0..20 {
        let id = format!("r{round}");
        let mut input = json!({"file_path": "wide.txt"});
        if let Some(o) = offset {
            input["offset"] = json!(o);
        }
        server.tool_use(&id, "Read", input);
        let r = server.result(&id);
        assert_inline_success(&r, 50_000);
        seen += text(&r).matches(" wwww").count();
        offset = read_on(text(&r));
        if offset.is_none() {
            assert!(text(&r).contains("   400\tL400 "));
            break;
        }
    }
    assert!(offset.is_none(), "never reached the end");
    assert_eq!(seen, 400, "every line exactly once");
}

#[test]
fn an_offset_without_a_limit_says_more_lines_exist() {
    let sb = Sandbox::new();
    let body: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    sb.write("long.txt", &body);
    let mut server = sb.serve(&[]);
    server.tool_use("r", "Read", json!({"file_path": "long.txt", "offset": 500}));
    let r = server.result("r");
    assert_inline_success(&r, 50_000);
    let c = text(&r);
    assert!(
        c.contains("   500\t500\n") && c.contains("  2499\t2499\n"),
        "{c}"
    );
    assert!(!c.contains("\t2500\n"));
    assert!(c.contains("Showing lines 500–2499 of 3000"), "{c}");
    assert_eq!(read_on(c), Some(2500));
    // With a limit the window is what was asked for, and no notice is added.
    server.tool_use(
        "r2",
        "Read",
        json!({"file_path": "long.txt", "offset": 10, "limit": 5}),
    );
    let r = server.result("r2");
    assert_eq!(
        text(&r),
        "    10\t10\n    11\t11\n    12\t12\n    13\t13\n    14\t14\n"
    );
}

#[test]
fn the_limit_a_refusal_suggests_fits() {
    let sb = Sandbox::new();
    let body: String = (1..=300)
        .map(|i| format!("L{i} {}\n", "q".repeat(995)))
        .collect();
    sb.write("wide.txt", &body);
    let mut server = sb.serve(&[]);
    server.tool_use(
        "big",
        "Read",
        json!({"file_path": "wide.txt", "offset": 7, "limit": 300}),
    );
    let r = server.result("big");
    assert_eq!(r["outcome"], "failed");
    let c = text(&r);
    let at = c.find("limit=").expect("a limit is suggested") + "limit=".len();
    let fit: u64 = c[at..].split(' ').next().unwrap().parse().unwrap();
    assert!(c.contains("from offset 7"), "{c}");
    server.tool_use(
        "fit",
        "Read",
        json!({"file_path": "wide.txt", "offset": 7, "limit": fit}),
    );
    let r = server.result("fit");
    assert_inline_success(&r, 50_000);
    assert_eq!(text(&r).matches(" qqqq").count() as u64, fit);
}

#[test]
fn a_per_tool_budget_is_reads_own_limit() {
    let sb = Sandbox::new();
    let settings = sb.write(
        "settings.json",
        r#"{"limits": {"per_tool": {"Read": 8000}}}"#,
    );
    let body: String = (1..=100)
        .map(|i| format!("L{i} {}\n", "p".repeat(295)))
        .collect();
    sb.write("wide.txt", &body);
    // Not valid UTF-8 at the start: the note Read adds must fit too.
    let mut bytes = b"caf\xe9\n".to_vec();
    bytes.extend_from_slice(body.as_bytes());
    std::fs::write(sb.path("latin1.txt"), bytes).unwrap();
    let settings = settings.display().to_string();
    let mut server = sb.serve(&["--settings", &settings]);
    for (id, file) in [("a", "wide.txt"), ("b", "latin1.txt")] {
        server.tool_use(id, "Read", json!({"file_path": file}));
        let r = server.result(id);
        assert_inline_success(&r, 8000);
        assert!(text(&r).contains("8000 characters"), "{r}");
        assert!(read_on(text(&r)).is_some());
    }
    assert!(text(&server.result("b")).contains("not valid UTF-8"));
}

#[test]
fn the_default_line_cap_says_more_lines_exist() {
    let sb = Sandbox::new();
    let body: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    sb.write("long.txt", &body);
    let mut server = sb.serve(&[]);
    server.tool_use("r", "Read", json!({"file_path": "long.txt"}));
    let r = server.result("r");
    assert_inline_success(&r, 50_000);
    let c = text(&r);
    assert!(
        c.starts_with("     1\t1\n") && c.contains("  2000\t2000\n"),
        "{c}"
    );
    assert!(!c.contains("\t2001\n"));
    assert!(
        c.contains("[Showing lines 1–2000 of 3000: one Read returns at most 2000 lines"),
        "{c}"
    );
    assert_eq!(read_on(c), Some(2001));
    // A file of exactly the cap is whole: no notice.
    let body: String = (1..=2000).map(|i| format!("{i}\n")).collect();
    sb.write("exact.txt", &body);
    server.tool_use("e", "Read", json!({"file_path": "exact.txt"}));
    let e = server.result("e");
    assert!(text(&e).ends_with("  2000\t2000\n"), "{e}");
    assert!(read_on(text(&e)).is_none());
}
