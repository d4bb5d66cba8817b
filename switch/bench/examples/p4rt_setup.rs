//! Pushes a pipeline and forwarding entries to a P4Runtime switch (p4cc-switch
//! or bmv2 simple_switch_grpc) for the benchmarks, then exits.
//!
//! usage: p4rt_setup ADDR JSON P4INFO.bin ROUTE...
//!   ROUTE = IP/PLEN=PORT,MAC  (entry in CcIngress.forwarding.ipv4_lpm)
use p4cc_bench::{parse_ip, parse_mac};
use p4rt::proto::p4::config::v1::P4Info;
use p4rt::proto::p4::v1 as p4v1;
use p4rt::proto::p4::v1::p4_runtime_client::P4RuntimeClient;
use prost::Message;

fn die(m: String) -> ! {
    eprintln!("p4rt_setup: {m}");
    std::process::exit(1)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 {
        die("usage: p4rt_setup ADDR JSON P4INFO.bin IP/PLEN=PORT,MAC...".into());
    }
    let json = std::fs::read(&a[2]).unwrap_or_else(|e| die(format!("{}: {e}", a[2])));
    let info = P4Info::decode(std::fs::read(&a[3]).unwrap_or_else(|e| die(format!("{}: {e}", a[3]))).as_slice())
        .unwrap_or_else(|e| die(format!("{}: {e}", a[3])));
    let table = info.tables.iter().find(|t| t.preamble.as_ref().map(|p| p.name.as_str()) == Some("CcIngress.forwarding.ipv4_lpm")).unwrap_or_else(|| die("no ipv4_lpm table".into()));
    let action = info.actions.iter().find(|t| t.preamble.as_ref().map(|p| p.name.as_str()) == Some("CcIngress.forwarding.forward")).unwrap_or_else(|| die("no forward action".into()));
    let (tid, aid) = (table.preamble.as_ref().unwrap().id, action.preamble.as_ref().unwrap().id);

    let mut c = None;
    for _ in 0..100 {
        if let Ok(x) = P4RuntimeClient::connect(format!("http://{}", a[1])).await {
            c = Some(x);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let mut c = c.unwrap_or_else(|| die(format!("cannot connect to {}", a[1])));
    let election = Some(p4v1::Uint128 { high: 0, low: 1 });
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tx.send(p4v1::StreamMessageRequest {
        update: Some(p4v1::stream_message_request::Update::Arbitration(p4v1::MasterArbitrationUpdate {
            device_id: 1,
            election_id: election,
            ..Default::default()
        })),
    })
    .await
    .unwrap();
    let mut stream = c.stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx)).await.unwrap_or_else(|e| die(format!("stream: {e}"))).into_inner();
    let _ = stream.message().await;
    c.set_forwarding_pipeline_config(p4v1::SetForwardingPipelineConfigRequest {
        device_id: 1,
        election_id: election,
        action: p4v1::set_forwarding_pipeline_config_request::Action::VerifyAndCommit as i32,
        config: Some(p4v1::ForwardingPipelineConfig { p4info: Some(info.clone()), p4_device_config: json, cookie: None }),
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| die(format!("SetForwardingPipelineConfig: {e}")));
    let mut updates = vec![];
    for r in &a[4..] {
        let (net, rest) = r.split_once('=').unwrap_or_else(|| die(format!("bad route {r}")));
        let (ip, plen) = net.split_once('/').unwrap_or_else(|| die(format!("bad route {r}")));
        let (port, mac) = rest.split_once(',').unwrap_or_else(|| die(format!("bad route {r}")));
        let ip = parse_ip(ip).unwrap_or_else(|| die(format!("bad ip in {r}")));
        let mac = parse_mac(mac).unwrap_or_else(|| die(format!("bad mac in {r}")));
        let port: u16 = port.parse().unwrap_or_else(|_| die(format!("bad port in {r}")));
        updates.push(p4v1::Update {
            r#type: p4v1::update::Type::Insert as i32,
            entity: Some(p4v1::Entity {
                entity: Some(p4v1::entity::Entity::TableEntry(p4v1::TableEntry {
                    table_id: tid,
                    r#match: vec![p4v1::FieldMatch {
                        field_id: 1,
                        field_match_type: Some(p4v1::field_match::FieldMatchType::Lpm(p4v1::field_match::Lpm { value: ip.to_vec(), prefix_len: plen.parse().unwrap_or(32) })),
                    }],
                    action: Some(p4v1::TableAction {
                        r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                            action_id: aid,
                            params: vec![p4v1::action::Param { param_id: 1, value: port.to_be_bytes().to_vec() }, p4v1::action::Param { param_id: 2, value: mac.to_vec() }],
                        })),
                    }),
                    ..Default::default()
                })),
            }),
        });
    }
    c.write(p4v1::WriteRequest { device_id: 1, election_id: election, updates, ..Default::default() })
        .await
        .unwrap_or_else(|e| die(format!("Write: {e}")));
    println!("p4rt_setup: pipeline and {} routes installed on {}", a.len() - 4, a[1]);
}
