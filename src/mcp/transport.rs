//! The stdio transport toolrt gives rmcp: rmcp's own encoding, a writer that puts requests
//! queued together into one write, and a reader that decodes a tool result straight into its
//! type.
//!
//! rmcp's reader decodes every message a server sends into its one untagged union of results,
//! trying each kind of result a server may send (fifteen of them come before a tool result),
//! building and dropping an error for each that does not fit: on an MCP call that is most of
//! the client's work. A `tools/call` answer is by far the most frequent message here, and none
//! of the other requests toolrt sends (`initialize`, `tools/list`, `resources/list`,
//! `resources/read`) has a result with `content`, `structuredContent` or `isError` at its top
//! level, which a tool result needs at least one of (rmcp's `CallToolResult` refuses anything
//! else). So a response is first decoded as a tool result, and everything else — other
//! responses, requests, notifications, errors, a result rmcp cannot type — goes through rmcp's
//! own codec, unchanged.
//!
//! rmcp's writer makes one `write` per message. rmcp's service loop takes every request the
//! calls have queued before it yields and starts one send task for each; here `send` encodes
//! its message at once, in rmcp's order, and the first send task to run writes all the lines
//! encoded so far, so that the others find nothing left to write.

use std::future::Future;
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, JsonRpcMessage, JsonRpcResponse, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::TxJsonRpcMessage;
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{JsonRpcMessageCodec, JsonRpcMessageCodecError};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::codec::{Decoder, Encoder};

/// A stdio connection to a server: lines in from `R`, messages out to `W`.
/// Lines are not capped here: `R` fails a line past its cap (`process::LineCap`).
pub(crate) struct Stdio<R, W> {
    read: BufReader<R>,
    /// The line being read; kept when `receive` is dropped midway (rmcp polls it in a
    /// `select!`), so the next call resumes it.
    line: BytesMut,
    codec: JsonRpcMessageCodec<ServerJsonRpcMessage>,
    out: Arc<Out<W>>,
}

/// The writing half, shared by the send tasks rmcp starts.
struct Out<W> {
    /// Lines encoded by `send` and not yet taken by a writer, and the first write error (a
    /// broken pipe stays broken: every later send fails with it).
    queued: Mutex<(BytesMut, Option<(std::io::ErrorKind, String)>)>,
    /// The pipe (None once closed) and the bytes a writer took but has not written yet: a send
    /// task dropped mid-write leaves them for the next one.
    pipe: tokio::sync::Mutex<(Option<W>, BytesMut)>,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    fn queued(
        &self,
    ) -> std::sync::MutexGuard<'_, (BytesMut, Option<(std::io::ErrorKind, String)>)> {
        self.queued.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes every line queued so far (those of other sends too), unless an earlier writer
    /// already did.
    async fn flush(&self) -> std::io::Result<()> {
        let mut pipe = self.pipe.lock().await;
        let (write, pending) = &mut *pipe;
        {
            let mut queued = self.queued();
            let (lines, failed) = &mut *queued;
            if let Some((kind, text)) = failed {
                return Err(std::io::Error::new(*kind, text.clone()));
            }
            if pending.is_empty() {
                std::mem::swap(pending, lines);
            } else {
                pending.extend_from_slice(lines);
                lines.clear();
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        let Some(write) = write.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "Transport is closed",
            ));
        };
        let mut written = Ok(());
        while !pending.is_empty() && written.is_ok() {
            written = match write.write_buf(pending).await {
                Ok(0) => Err(std::io::ErrorKind::WriteZero.into()),
                Ok(_) => Ok(()),
                Err(e) => Err(e),
            };
        }
        let written = match written {
            Ok(()) => write.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = &written {
            pending.clear();
            self.queued().1 = Some((e.kind(), e.to_string()));
        }
        written
    }
}

impl<R, W> Stdio<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A connection reading `read` and writing `write`.
    pub(crate) fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: BytesMut::new(),
            codec: JsonRpcMessageCodec::new(),
            out: Arc::new(Out {
                queued: Mutex::new((BytesMut::new(), None)),
                pipe: tokio::sync::Mutex::new((Some(write), BytesMut::new())),
            }),
        }
    }

    /// Reads up to and including the next newline into `self.line`; false at end of input or
    /// on a read error (the connection is over). Cancel-safe: bytes are moved from the reader's
    /// buffer to the line with no await in between.
    async fn read_line(&mut self) -> bool {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(e) => {
                    tracing::debug!("MCP server stdout: {e}");
                    return false;
                }
            };
            if available.is_empty() {
                return false;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            self.line.extend_from_slice(&available[..take]);
            self.read.consume(take);
            if newline.is_some() {
                return true;
            }
        }
    }
}

/// A response line decoded as a tool result, if it is one.
fn tool_result(line: &[u8]) -> Option<ServerJsonRpcMessage> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    // Only a response has a result: skip the attempt for anything else.
    if !line.windows(8).any(|w| w == b"\"result\"") {
        return None;
    }
    let (jsonrpc, id, result) = match serde_json::from_slice::<JsonRpcResponse<TextResult>>(line) {
        Ok(r) => (r.jsonrpc, r.id, r.result.into_result()),
        Err(_) => {
            let r: JsonRpcResponse<CallToolResult> = serde_json::from_slice(line).ok()?;
            (r.jsonrpc, r.id, r.result)
        }
    };
    Some(JsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc,
        id,
        result: ServerResult::CallToolResult(result),
    }))
}

/// The usual tool result: text blocks and perhaps `isError`, nothing else. Decoded as plain
/// structs, without the buffering serde needs for rmcp's content blocks (an enum tagged by a
/// field), at about half the cost; any other key or block fails it, and the line then takes
/// rmcp's `CallToolResult`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TextResult {
    content: Vec<TextBlock>,
    #[serde(default)]
    is_error: Option<bool>,
}

/// A content block `{"type": "text", "text": …}` with no other key.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TextBlock {
    #[serde(rename = "type")]
    _kind: TextTag,
    text: String,
}

#[derive(serde::Deserialize)]
enum TextTag {
    #[serde(rename = "text")]
    Text,
}

impl TextResult {
    /// The result as rmcp would have decoded the same line.
    fn into_result(self) -> CallToolResult {
        let content = self.content.into_iter().map(|b| ContentBlock::text(b.text));
        let mut result = CallToolResult::success(content.collect());
        result.is_error = self.is_error;
        // Absent on the wire; rmcp's constructors fill it in.
        result.result_type = None;
        result
    }
}

impl<R, W> Transport<RoleClient> for Stdio<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    /// Encodes `item` now (so lines go out in the order rmcp sends them); the future writes it
    /// with whatever else is queued, or finds it written by an earlier send's future.
    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let encoded = {
            let mut queued = self.out.queued();
            match &queued.1 {
                Some((kind, text)) => Err(std::io::Error::new(*kind, text.clone())),
                None => JsonRpcMessageCodec::<TxJsonRpcMessage<RoleClient>>::new()
                    .encode(item, &mut queued.0)
                    .map_err(std::io::Error::other),
            }
        };
        let out = self.out.clone();
        async move {
            encoded?;
            out.flush().await
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            if !self.read_line().await {
                return None;
            }
            if let Some(message) = tool_result(&self.line) {
                self.line.clear();
                return Some(message);
            }
            // rmcp's own decoding, with its leniency: a notification it does not know is
            // skipped, and so is a line that is not JSON.
            let decoded = self.codec.decode(&mut self.line);
            self.line.clear();
            match decoded {
                Ok(Some(message)) => return Some(message),
                Ok(None) => {}
                Err(JsonRpcMessageCodecError::Serde(e))
                    if matches!(
                        e.classify(),
                        serde_json::error::Category::Data | serde_json::error::Category::Io
                    ) =>
                {
                    // JSON that is not a message: answered as rmcp answers it.
                    tracing::debug!("MCP server sent an invalid message: {e}");
                    let reply = TxJsonRpcMessage::<RoleClient>::error(
                        ErrorData::invalid_request("Invalid request", None),
                        None,
                    );
                    if self.send(reply).await.is_err() {
                        return None;
                    }
                }
                Err(e) => tracing::debug!("MCP server sent a line that is not JSON: {e}"),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // As rmcp's writer closes: the pipe is dropped, whatever was not written with it.
        self.out.pipe.lock().await.0.take();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rmcp's own codec makes of a line.
    fn rmcp_decode(line: &str) -> Option<ServerJsonRpcMessage> {
        let mut buf = BytesMut::from(format!("{line}\n").as_bytes());
        JsonRpcMessageCodec::<ServerJsonRpcMessage>::new()
            .decode(&mut buf)
            .ok()
            .flatten()
    }

    #[test]
    fn tool_results_decode_as_rmcp_decodes_them_and_nothing_else_takes_the_short_way() {
        for (line, short_way) in [
            (
                r#"{"result":{"content":[{"type":"text","text":"Echo: hi"}]},"jsonrpc":"2.0","id":3}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"x"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"structuredContent":{"n":1},"isError":false,"_meta":{"k":1}}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":5,"result":{"structuredContent":{"a":[1,2]}}}"#,
                true,
            ),
            // Text only (the plain structs); then near misses, which take rmcp's
            // `CallToolResult` instead (the plain structs refuse them, tested below).
            (r#"{"jsonrpc":"2.0","id":9,"result":{"content":[]}}"#, true),
            (
                r#"{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"a\nb \u00e9"},{"text":"c","type":"text"}],"isError":null}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"x","_meta":{"k":1}}],"_meta":{"k":2}}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":13,"result":{"resultType":"complete","content":[{"type":"text","text":"x"}],"isError":false}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":14,"result":{"content":[{"type":"text","text":"x"}],"structuredContent":null}}"#,
                true,
            ),
            // Not tool results: rmcp's own decoding.
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"a://b","text":"t"}]}}"#,
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":6,"result":{}}"#, false),
            // A content type rmcp does not know: its raw result, as before.
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"widget","spin":3}]}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"error":{"code":-32001,"message":"custom","data":{"result":1}}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
                false,
            ),
        ] {
            let short = tool_result(format!("{line}\r\n").as_bytes());
            assert_eq!(short.is_some(), short_way, "{line}");
            let rmcp = rmcp_decode(line);
            assert!(rmcp.is_some(), "rmcp decodes {line}");
            if let Some(short) = short {
                assert_eq!(
                    serde_json::to_value(&short).unwrap(),
                    serde_json::to_value(rmcp.as_ref().unwrap()).unwrap(),
                    "{line}"
                );
                assert!(
                    matches!(
                        rmcp,
                        Some(JsonRpcMessage::Response(JsonRpcResponse {
                            result: ServerResult::CallToolResult(_),
                            ..
                        }))
                    ),
                    "rmcp too takes {line} for a tool result"
                );
            }
        }
    }

    #[test]
    fn only_text_blocks_and_is_error_take_the_plain_structs() {
        let plain = |result: &str| {
            let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
            serde_json::from_str::<JsonRpcResponse<TextResult>>(&line).is_ok()
        };
        assert!(plain(r#"{"content":[{"type":"text","text":"Echo: hi"}]}"#));
        assert!(plain(r#"{"content":[],"isError":true}"#));
        for other in [
            r#"{"content":[{"type":"text","text":"x","annotations":{}}]}"#,
            r#"{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"text","text":"x"}],"_meta":{}}"#,
            r#"{"content":[{"type":"text","text":"x"}],"structuredContent":1}"#,
            r#"{"content":[{"type":"text","text":"x"}],"resultType":"complete"}"#,
            r#"{"isError":false}"#,
            // Malformed: left to rmcp, whatever it makes of them.
            r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#,
            r#"{"content":[{"type":"text","text":null}]}"#,
            r#"{"content":[{"type":"text","text":"x"}],"isError":"yes"}"#,
        ] {
            assert!(!plain(other), "{other}");
            let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{other}}}"#);
            let short = tool_result(line.as_bytes()).map(|m| serde_json::to_value(m).unwrap());
            let rmcp = rmcp_decode(&line)
                .filter(|m| {
                    matches!(
                        m,
                        JsonRpcMessage::Response(JsonRpcResponse {
                            result: ServerResult::CallToolResult(_),
                            ..
                        })
                    )
                })
                .map(|m| serde_json::to_value(m).unwrap());
            assert_eq!(short, rmcp, "{other}");
        }
    }

    /// A pipe that records each write, takes at most `chunk` bytes per write, can refuse
    /// its first write (Pending, woken at once), and can fail.
    struct Recorder {
        writes: Arc<Mutex<Vec<Vec<u8>>>>,
        chunk: usize,
        pending_once: bool,
        broken: bool,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            if self.pending_once {
                self.pending_once = false;
                cx.waker().wake_by_ref();
                return std::task::Poll::Pending;
            }
            if self.broken {
                return std::task::Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
            }
            let n = buf.len().min(self.chunk);
            self.writes.lock().unwrap().push(buf[..n].to_vec());
            std::task::Poll::Ready(Ok(n))
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    fn call(id: i64) -> TxJsonRpcMessage<RoleClient> {
        use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, NumberOrString};
        let params = CallToolRequestParams::new("echo");
        JsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            NumberOrString::Number(id),
        )
    }

    /// What rmcp's own writer puts on the pipe for `ids`, one line each.
    fn rmcp_lines(ids: &[i64]) -> Vec<u8> {
        let mut buf = BytesMut::new();
        for id in ids {
            JsonRpcMessageCodec::<TxJsonRpcMessage<RoleClient>>::new()
                .encode(call(*id), &mut buf)
                .unwrap();
        }
        buf.to_vec()
    }

    #[tokio::test]
    async fn sends_queued_together_go_out_in_one_write_as_rmcp_encodes_them() {
        // (bytes per write the pipe takes, writes expected)
        for (chunk, writes_expected) in [(usize::MAX, Some(1)), (7, None)] {
            let writes = Arc::new(Mutex::new(Vec::new()));
            let pipe = Recorder {
                writes: writes.clone(),
                chunk,
                pending_once: false,
                broken: false,
            };
            let mut stdio = Stdio::new(tokio::io::empty(), pipe);
            // `send` encodes at once: the futures of 1 and 2 are dropped before they run (as
            // if rmcp had started them later), and 3's future writes all three.
            drop(stdio.send(call(1)));
            drop(stdio.send(call(2)));
            stdio.send(call(3)).await.unwrap();
            // A send on its own is written by its own future.
            stdio.send(call(4)).await.unwrap();
            let writes = writes.lock().unwrap().clone();
            if let Some(n) = writes_expected {
                assert_eq!(writes.len(), n + 1, "chunk {chunk}");
            }
            assert_eq!(writes.concat(), rmcp_lines(&[1, 2, 3, 4]), "chunk {chunk}");
        }
    }

    #[tokio::test]
    async fn a_send_dropped_mid_write_leaves_its_lines_to_the_next() {
        let writes = Arc::new(Mutex::new(Vec::new()));
        let pipe = Recorder {
            writes: writes.clone(),
            chunk: usize::MAX,
            pending_once: true,
            broken: false,
        };
        let mut stdio = Stdio::new(tokio::io::empty(), pipe);
        drop(stdio.send(call(1)));
        // This future takes both lines, the pipe is not ready, and the future is dropped.
        assert!(futures::FutureExt::now_or_never(stdio.send(call(2))).is_none());
        stdio.send(call(3)).await.unwrap();
        assert_eq!(writes.lock().unwrap().concat(), rmcp_lines(&[1, 2, 3]));
    }

    #[tokio::test]
    async fn a_broken_pipe_fails_the_sends_it_took_and_every_later_one() {
        let pipe = Recorder {
            writes: Arc::default(),
            chunk: usize::MAX,
            pending_once: false,
            broken: true,
        };
        let mut stdio = Stdio::new(tokio::io::empty(), pipe);
        drop(stdio.send(call(1)));
        // This future takes lines 1 and 2 and fails; a later send fails as well.
        let e = stdio.send(call(2)).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        let e = stdio.send(call(3)).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        Transport::<RoleClient>::close(&mut stdio).await.unwrap();
    }

    #[tokio::test]
    async fn lines_come_whole_in_order_and_invalid_ones_are_skipped() {
        let input = concat!(
            "not json\n",
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}"#,
            "\n\n",
            r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"b"}]}}"#,
        );
        let mut stdio = Stdio::new(input.as_bytes(), tokio::io::sink());
        let mut ids = Vec::new();
        while let Some(message) = stdio.receive().await {
            if let JsonRpcMessage::Response(r) = message {
                let id = serde_json::to_value(&r.id).unwrap().to_string();
                ids.push((id, matches!(r.result, ServerResult::CallToolResult(_))));
            }
        }
        // The last line has no newline: the server ended mid-message, nothing is made up.
        assert_eq!(
            ids,
            [("1".to_string(), true), ("2".to_string(), false)],
            "in order, the line without an end dropped"
        );
    }
}
