//! Temporary probe (not committed): costs of ractor spawn and hops.
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::time::Instant;

struct Stage;
impl Actor for Stage {
    type Msg = RpcReplyPort<u32>;
    type State = ();
    type Arguments = ();
    async fn pre_start(&self, _: ActorRef<Self::Msg>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
    async fn handle(
        &self,
        _: ActorRef<Self::Msg>,
        m: Self::Msg,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        let _ = m.send(1);
        Ok(())
    }
}
struct Sup;
impl Actor for Sup {
    type Msg = ();
    type State = Option<(
        ActorRef<RpcReplyPort<u32>>,
        usize,
        tokio::sync::oneshot::Sender<()>,
    )>;
    type Arguments = (
        ActorRef<RpcReplyPort<u32>>,
        usize,
        tokio::sync::oneshot::Sender<()>,
    );
    async fn pre_start(
        &self,
        _: ActorRef<()>,
        a: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(Some(a))
    }
    async fn post_start(
        &self,
        me: ActorRef<()>,
        s: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let (stage, hops, done) = s.take().unwrap();
        for _ in 0..hops {
            let (tx, rx) = tokio::sync::oneshot::channel();
            stage.send_message(RpcReplyPort::from(tx)).unwrap();
            rx.await.unwrap();
        }
        let _ = done.send(());
        me.stop(None);
        Ok(())
    }
}
fn main() {
    for threads in [0usize, 1, 2] {
        let rt = if threads == 0 {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_all()
                .build()
                .unwrap()
        };
        rt.block_on(async {
            let (stage, _) = Actor::spawn(None, Stage, ()).await.unwrap();
            for hops in [0usize, 1, 4] {
                let n = 50_000;
                let t = Instant::now();
                for _ in 0..n {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    Actor::spawn(None, Sup, (stage.clone(), hops, tx))
                        .await
                        .unwrap();
                    rx.await.unwrap();
                }
                println!(
                    "threads={threads} hops={hops}: {:.2} us/call",
                    t.elapsed().as_secs_f64() * 1e6 / n as f64
                );
            }
            // tokio spawn baseline
            let n = 50_000;
            let t = Instant::now();
            for _ in 0..n {
                tokio::spawn(async {}).await.unwrap();
            }
            println!(
                "threads={threads} tokio spawn+join: {:.2} us",
                t.elapsed().as_secs_f64() * 1e6 / n as f64
            );
        });
    }
}
