//! What the instruction-counting examples share: a temporary folder to work in and a
//! current-thread runtime to run on, and how they end.

use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs `work` in a fresh temporary folder (kept until `work` is done) on a current-thread
/// runtime. A set-up failure ends with `usage` (exit 2); an error of `work` is printed under
/// `program`'s name (exit 1).
pub(crate) fn run_counted<F>(
    program: &str,
    usage: fn(&str) -> ExitCode,
    work: impl FnOnce(PathBuf) -> F,
) -> ExitCode
where
    F: Future<Output = Result<(), String>>,
{
    let cwd = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => return usage(&format!("no temporary folder: {e}")),
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return usage(&format!("no async runtime: {e}")),
    };
    match rt.block_on(work(cwd.path().to_path_buf())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program}: {e}");
            ExitCode::from(1)
        }
    }
}
