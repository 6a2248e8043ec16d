//! Progress of calls on workers, brought to the client.
//!
//! A worker's tool reports progress as a local one does (Bash: new output every 200 ms at
//! most); the worker sends each update to its coordinator's relay actor, found through a
//! process group named after the coordinator (which ractor_cluster shares with each worker
//! when their session opens). The relay hands it to the call's own progress sink, which
//! drops it, as for a local call, when the client reads too slowly.
//!
//! The relay also answers the `Network(host)` asks of sandboxed commands on workers, through
//! the session's own ask path, while the call that asks is running.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef};

use tokio_util::sync::CancellationToken;

use super::wire::{NetworkNote, ProgressNote, RelayMsg, Wire, progress_group};
use crate::sandbox::Sandbox;
use crate::sandbox::proxy::NetworkAsk;
use crate::tool::ProgressSink;

/// The calls running on workers, by call id: each one's progress sink, and a token cancelled
/// when it ends.
#[derive(Default)]
pub(crate) struct Routes(Mutex<HashMap<String, (ProgressSink, CancellationToken)>>);

impl Routes {
    fn table(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (ProgressSink, CancellationToken)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Routes call `id`'s updates to `sink` until the returned guard is dropped.
    pub(crate) fn open(self: &Arc<Self>, id: &str, sink: ProgressSink) -> Route {
        let ended = CancellationToken::new();
        self.table().insert(id.to_string(), (sink, ended));
        Route {
            routes: self.clone(),
            id: id.to_string(),
        }
    }

    fn deliver(&self, note: ProgressNote) {
        let sink = self.table().get(&note.id).map(|(sink, _)| sink.clone());
        if let Some(sink) = sink {
            sink.send(note.data);
        }
    }

    /// The token of call `id` while it runs.
    fn running(&self, id: &str) -> Option<CancellationToken> {
        self.table().get(id).map(|(_, ended)| ended.clone())
    }
}

/// One call's route; closed when dropped.
pub(crate) struct Route {
    routes: Arc<Routes>,
    id: String,
}

impl Drop for Route {
    fn drop(&mut self) {
        if let Some((_, ended)) = self.routes.table().remove(&self.id) {
            ended.cancel();
        }
    }
}

/// The coordinator's relay actor.
pub(crate) struct Relay {
    /// The session's Bash sandbox, whose ask path answers workers' `Network(host)` asks.
    sandbox: Option<Arc<Sandbox>>,
}

impl Relay {
    /// Starts the relay of coordinator `name`, delivering to `routes`.
    pub(crate) async fn start(
        name: &str,
        routes: Arc<Routes>,
        sandbox: Option<Arc<Sandbox>>,
    ) -> Result<ActorRef<RelayMsg>, String> {
        let (relay, _) = Actor::spawn(None, Relay { sandbox }, (progress_group(name), routes))
            .await
            .map_err(|e| format!("cannot start the progress relay: {e}"))?;
        Ok(relay)
    }

    /// Answers whether the sandboxed command of call `note.id` may connect to its host, on a
    /// task of its own (the client may take a while): no for a call not running on a worker
    /// now, or without a sandbox here.
    fn ask(&self, note: NetworkNote, routes: &Routes, reply: ractor::RpcReplyPort<bool>) {
        let (Some(sandbox), Some(ended)) = (self.sandbox.clone(), routes.running(&note.id)) else {
            let _ = reply.send(false);
            return;
        };
        tokio::spawn(async move {
            let ask = NetworkAsk {
                tool_use_id: note.id,
                host: note.host,
                port: note.port,
                cancel: ended,
            };
            let _ = reply.send(sandbox.ask_network(ask).await);
        });
    }
}

impl Actor for Relay {
    type Msg = RelayMsg;
    type State = Arc<Routes>;
    type Arguments = (String, Arc<Routes>);

    async fn pre_start(
        &self,
        myself: ActorRef<RelayMsg>,
        (group, routes): (String, Arc<Routes>),
    ) -> Result<Arc<Routes>, ActorProcessingErr> {
        ractor::pg::join(group, vec![myself.get_cell()]);
        Ok(routes)
    }

    async fn handle(
        &self,
        _myself: ActorRef<RelayMsg>,
        message: RelayMsg,
        routes: &mut Arc<Routes>,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            RelayMsg::Progress(Wire(Ok(note))) => routes.deliver(note),
            RelayMsg::Progress(Wire(Err(e))) => tracing::warn!(%e, "unreadable progress update"),
            RelayMsg::AskNetwork(Wire(Ok(note)), reply) => self.ask(note, routes, reply),
            RelayMsg::AskNetwork(Wire(Err(e)), reply) => {
                tracing::warn!(%e, "unreadable network ask");
                let _ = reply.send(false);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_reach_the_open_route_of_their_call_only() {
        let routes = Arc::new(Routes::default());
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let got = got.clone();
            ProgressSink::new(move |v| got.lock().unwrap().push(v))
        };
        let route = routes.open("a", sink);
        let note = |id: &str, n: i32| ProgressNote {
            id: id.into(),
            data: serde_json::json!(n),
        };
        routes.deliver(note("a", 1));
        routes.deliver(note("b", 2));
        drop(route);
        routes.deliver(note("a", 3));
        assert_eq!(*got.lock().unwrap(), [serde_json::json!(1)]);
        assert!(routes.table().is_empty());
    }
}
