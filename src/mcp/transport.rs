//! The stdio transport toolrt gives rmcp: rmcp's own writer, and a reader that decodes a tool
//! result straight into its type.
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

use std::future::Future;

use bytes::BytesMut;
use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ErrorData, JsonRpcMessage, JsonRpcResponse, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::TxJsonRpcMessage;
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, JsonRpcMessageCodec, JsonRpcMessageCodecError};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio_util::codec::Decoder;

/// A stdio connection to a server: lines in from `R`, messages out to `W` by rmcp's writer.
/// Lines are not capped here: `R` fails a line past its cap (`process::LineCap`).
pub(crate) struct Stdio<R, W: AsyncWrite> {
    read: BufReader<R>,
    /// The line being read; kept when `receive` is dropped midway (rmcp polls it in a
    /// `select!`), so the next call resumes it.
    line: BytesMut,
    codec: JsonRpcMessageCodec<ServerJsonRpcMessage>,
    write: AsyncRwTransport<RoleClient, tokio::io::Empty, W>,
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
            // Only its writer is used: `receive` below reads.
            write: AsyncRwTransport::new_client(tokio::io::empty(), write),
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
    let response: JsonRpcResponse<CallToolResult> = serde_json::from_slice(line).ok()?;
    Some(JsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc: response.jsonrpc,
        id: response.id,
        result: ServerResult::CallToolResult(response.result),
    }))
}

impl<R, W> Transport<RoleClient> for Stdio<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.write.send(item)
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
                    if self.write.send(reply).await.is_err() {
                        return None;
                    }
                }
                Err(e) => tracing::debug!("MCP server sent a line that is not JSON: {e}"),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Transport::<RoleClient>::close(&mut self.write).await
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
