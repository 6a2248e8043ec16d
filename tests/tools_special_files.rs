//! Read, Edit and Write touch regular files only: a device, FIFO or socket is refused at once,
//! never read without end (`/dev/zero`) or waited on (a FIFO nobody writes).

mod support;

use serde_json::json;
use support::*;

/// The server's peak RSS must stay under this while it refuses the calls (reading `/dev/zero`
/// whole would grow it by gigabytes).
const PEAK_KIB: u64 = 256 * 1024;

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn read_refuses_devices_fifos_and_links_to_them() {
    let sb = Sandbox::new();
    mkfifo(&sb.path("pipe"));
    std::os::unix::fs::symlink("/dev/zero", sb.path("zeros")).unwrap();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    let cases = [
        ("zero", "/dev/zero"),
        ("urandom", "/dev/urandom"),
        ("fifo", "pipe"),
        ("link", "zeros"),
    ];
    for (id, path) in cases {
        server.tool_use(id, "Read", json!({"file_path": path}));
    }
    for (id, path) in cases {
        let r = server.result(id);
        assert_eq!(r["outcome"], "failed", "{path}: {r}");
        let content = r["content"].as_str().unwrap();
        assert!(content.contains("not a regular file"), "{path}: {content}");
    }
    let peak = status_kib(server.pid(), "VmHWM");
    assert!(peak < PEAK_KIB, "peak RSS {peak} KiB");
    // A regular file still reads.
    sb.write("f.txt", "one\n");
    server.tool_use("f", "Read", json!({"file_path": "f.txt"}));
    assert_eq!(server.result("f")["outcome"], "success");
    server.finish();
}

#[test]
fn write_and_edit_refuse_what_is_not_a_regular_file() {
    let sb = Sandbox::new();
    mkfifo(&sb.path("pipe"));
    // Without read-before-edit nothing else stops them.
    let settings = sb.dir.path().join("settings.json");
    std::fs::write(&settings, r#"{"tools": {"requireReadBeforeEdit": false}}"#).unwrap();
    let settings = settings.display().to_string();
    let mut server = sb.serve(&[
        "--permission-mode",
        "bypassPermissions",
        "--settings",
        &settings,
    ]);
    server.tool_use("w", "Write", json!({"file_path": "pipe", "content": "x"}));
    server.tool_use(
        "e",
        "Edit",
        json!({"file_path": "/dev/zero", "old_string": "a", "new_string": "b"}),
    );
    for id in ["w", "e"] {
        let r = server.result(id);
        assert_eq!(r["outcome"], "validation_error", "{r}");
        assert!(
            r["content"]
                .as_str()
                .unwrap()
                .contains("not a regular file"),
            "{r}"
        );
    }
    // Nothing is left waiting on the FIFO: the server exits at end of input.
    let finished = server.finish();
    assert_eq!(finished.of_type("tool_result").len(), 2);
}
