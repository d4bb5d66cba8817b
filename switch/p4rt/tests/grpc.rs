//! P4Runtime over real gRPC (tonic client ↔ server on loopback).
mod common;

use common::*;
use p4rt::proto::p4::v1 as p4v1;
use p4v1::entity::Entity as E;
use p4v1::update::Type as U;
use tonic::Code;

fn set_cfg(action: p4v1::set_forwarding_pipeline_config_request::Action, election: u64, cfg: Option<p4v1::ForwardingPipelineConfig>) -> p4v1::SetForwardingPipelineConfigRequest {
    p4v1::SetForwardingPipelineConfigRequest {
        device_id: DEVICE,
        election_id: eid(election),
        action: action as i32,
        config: cfg,
        ..Default::default()
    }
}

fn te(e: &p4v1::Entity) -> &p4v1::TableEntry {
    match &e.entity {
        Some(E::TableEntry(t)) => t,
        other => panic!("not a table entry: {other:?}"),
    }
}

#[tokio::test]
async fn pipeline_push_and_get() {
    let mut h = start().await;
    // Nothing set yet: Get answers with no config.
    let r = h.client.get_forwarding_pipeline_config(p4v1::GetForwardingPipelineConfigRequest { device_id: DEVICE, response_type: 0 }).await.unwrap();
    assert!(r.into_inner().config.is_none());
    let gen0 = h.slot.generation();
    let _s = primary_with_pipeline(&mut h, 10).await;
    assert!(h.slot.generation() > gen0, "the data plane was given the pipeline");
    assert!(h.slot.current().1.is_some());

    use p4v1::get_forwarding_pipeline_config_request::ResponseType as RT;
    let get = |rt: RT| p4v1::GetForwardingPipelineConfigRequest { device_id: DEVICE, response_type: rt as i32 };
    let all = h.client.get_forwarding_pipeline_config(get(RT::All)).await.unwrap().into_inner().config.unwrap();
    assert_eq!(all.p4info, Some(mini_p4info()));
    assert_eq!(all.p4_device_config, mini_json().into_bytes());
    assert_eq!(all.cookie.unwrap().cookie, 7);
    let c = h.client.get_forwarding_pipeline_config(get(RT::CookieOnly)).await.unwrap().into_inner().config.unwrap();
    assert!(c.p4info.is_none() && c.p4_device_config.is_empty());
    assert_eq!(c.cookie.unwrap().cookie, 7);
    let c = h.client.get_forwarding_pipeline_config(get(RT::P4infoAndCookie)).await.unwrap().into_inner().config.unwrap();
    assert!(c.p4info.is_some() && c.p4_device_config.is_empty());
    let c = h.client.get_forwarding_pipeline_config(get(RT::DeviceConfigAndCookie)).await.unwrap().into_inner().config.unwrap();
    assert!(c.p4info.is_none() && !c.p4_device_config.is_empty());

    let e = h.client.get_forwarding_pipeline_config(p4v1::GetForwardingPipelineConfigRequest { device_id: 9, response_type: 0 }).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
}

#[tokio::test]
async fn pipeline_actions() {
    use p4v1::set_forwarding_pipeline_config_request::Action as A;
    let mut h = start().await;
    let mut s = open_stream(&mut h.client).await;
    s.arbitrate(DEVICE, 5).await;
    assert_eq!(s.arbitration_code().await, 0);

    // VERIFY leaves the device as it was.
    h.client.set_forwarding_pipeline_config(set_cfg(A::Verify, 5, Some(config(1)))).await.unwrap();
    assert!(h.service.committed().is_none());
    // VERIFY without a config.
    let e = h.client.set_forwarding_pipeline_config(set_cfg(A::Verify, 5, None)).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    // COMMIT with nothing saved.
    let e = h.client.set_forwarding_pipeline_config(set_cfg(A::Commit, 5, None)).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    // VERIFY_AND_SAVE then COMMIT; writes in between go to the saved one.
    h.client.set_forwarding_pipeline_config(set_cfg(A::VerifyAndSave, 5, Some(config(2)))).await.unwrap();
    assert!(h.service.committed().is_none());
    write(&mut h, 5, vec![update(U::Insert, E::TableEntry(lpm_entry([10, 0, 0, 0], 8, &[1], &[0xaa])))]).await.unwrap();
    let e = h.client.set_forwarding_pipeline_config(set_cfg(A::Commit, 5, Some(config(2)))).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "COMMIT takes no config");
    h.client.set_forwarding_pipeline_config(set_cfg(A::Commit, 5, None)).await.unwrap();
    let got = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: T_LPM, ..Default::default() })]).await.unwrap();
    assert_eq!(got.len(), 1, "the write before COMMIT is live");

    // RECONCILE_AND_COMMIT keeps the entries.
    h.client.set_forwarding_pipeline_config(set_cfg(A::ReconcileAndCommit, 5, Some(config(3)))).await.unwrap();
    let got = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: T_LPM, ..Default::default() })]).await.unwrap();
    assert_eq!(got.len(), 1, "state preserved");
    // VERIFY_AND_COMMIT clears it.
    h.client.set_forwarding_pipeline_config(set_cfg(A::VerifyAndCommit, 5, Some(config(4)))).await.unwrap();
    let got = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: T_LPM, ..Default::default() })]).await.unwrap();
    assert!(got.is_empty());

    // Not the primary.
    let e = h.client.set_forwarding_pipeline_config(set_cfg(A::VerifyAndCommit, 4, Some(config(4)))).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // Bad device config.
    let mut bad = config(5);
    bad.p4_device_config = b"{not json".to_vec();
    let e = h.client.set_forwarding_pipeline_config(set_cfg(A::VerifyAndCommit, 5, Some(bad))).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let mut bad = config(5);
    bad.p4_device_config.clear();
    let e = h.client.set_forwarding_pipeline_config(set_cfg(A::VerifyAndCommit, 5, Some(bad))).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let mut bad = config(5);
    bad.p4info = None;
    let e = h.client.set_forwarding_pipeline_config(set_cfg(A::VerifyAndCommit, 5, Some(bad))).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn p4info_mismatch_is_named() {
    use p4v1::set_forwarding_pipeline_config_request::Action as A;
    let mut h = start().await;
    let mut s = open_stream(&mut h.client).await;
    s.arbitrate(DEVICE, 1).await;
    s.arbitration_code().await;
    let cases: Vec<(Box<dyn Fn(&mut p4rt::proto::p4::config::v1::P4Info)>, &str)> = vec![
        (Box::new(|i| i.tables[0].match_fields[0].bitwidth = 16), "dst_addr"),
        (Box::new(|i| i.tables[0].preamble.as_mut().unwrap().name = "CcIngress.nope".into()), "CcIngress.nope"),
        (Box::new(|i| i.actions[1].params[0].bitwidth = 16), "port"),
        (Box::new(|i| i.counters[0].size = 10), "port_packets"),
        (Box::new(|i| i.registers[0].preamble.as_mut().unwrap().name = "x.reg".into()), "x.reg"),
        (Box::new(|i| i.tables[2].match_fields[0].r#match = Some(p4rt::proto::p4::config::v1::match_field::Match::MatchType(4))), "egress_port"),
    ];
    for (mutate, needle) in cases {
        let mut c = config(1);
        mutate(c.p4info.as_mut().unwrap());
        let e = h.client.set_forwarding_pipeline_config(set_cfg(A::VerifyAndCommit, 1, Some(c))).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains(needle), "'{}' should name {needle}", e.message());
    }
}

#[tokio::test]
async fn no_pipeline_and_bad_device() {
    let mut h = start().await;
    let mut s = open_stream(&mut h.client).await;
    s.arbitrate(DEVICE, 1).await;
    assert_eq!(s.arbitration_code().await, 0);
    let e = write(&mut h, 1, vec![update(U::Insert, E::TableEntry(lpm_entry([10, 0, 0, 0], 8, &[1], &[1])))]).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    let e = read(&mut h, vec![E::TableEntry(Default::default())]).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    let e = h
        .client
        .write(p4v1::WriteRequest { device_id: 99, election_id: eid(1), ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let e = h.client.read(p4v1::ReadRequest { device_id: 99, ..Default::default() }).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    // Arbitration for an unknown device ends the stream with NOT_FOUND.
    let mut s2 = open_stream(&mut h.client).await;
    s2.arbitrate(42, 3).await;
    match s2.next().await {
        Some(Err(st)) => assert_eq!(st.code(), Code::NotFound),
        other => panic!("expected NOT_FOUND, got {other:?}"),
    }
    let caps = h.client.capabilities(p4v1::CapabilitiesRequest::default()).await.unwrap().into_inner();
    assert!(caps.p4runtime_api_version.starts_with("1."));
}

#[tokio::test]
async fn table_entries_write_read() {
    let mut h = start().await;
    let _s = primary_with_pipeline(&mut h, 3).await;
    // Padded values are accepted; reads return canonical ones.
    let ups = vec![
        update(U::Insert, E::TableEntry(lpm_entry([10, 0, 1, 0], 24, &[0, 2], &[0, 0, 0, 0, 0, 0x0b]))),
        update(U::Insert, E::TableEntry(lpm_entry([10, 0, 2, 0], 24, &[3], &[0x0c]))),
    ];
    write(&mut h, 3, ups).await.unwrap();
    let got = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: T_LPM, ..Default::default() })]).await.unwrap();
    assert_eq!(got.len(), 2);
    let first = te(&got[0]);
    assert_eq!(first.r#match, lpm_entry([10, 0, 1, 0], 24, &[2], &[0x0b]).r#match);
    assert_eq!(first.action, lpm_entry([10, 0, 1, 0], 24, &[2], &[0x0b]).action, "canonical bytes");
    // Read one entry by its match.
    let q = p4v1::TableEntry { table_id: T_LPM, r#match: lpm_entry([10, 0, 2, 0], 24, &[0], &[0]).r#match, ..Default::default() };
    let got = read(&mut h, vec![E::TableEntry(q)]).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(te(&got[0]).action, lpm_entry([0; 4], 24, &[3], &[0x0c]).action);
    // Modify, then read back.
    write(&mut h, 3, vec![update(U::Modify, E::TableEntry(lpm_entry([10, 0, 2, 0], 24, &[4], &[0x0d])))]).await.unwrap();
    let got = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: T_LPM, ..Default::default() })]).await.unwrap();
    assert!(got.iter().any(|e| te(e).action == lpm_entry([0; 4], 24, &[4], &[0x0d]).action));
    // Wildcard over all tables.
    let all = read(&mut h, vec![E::TableEntry(Default::default())]).await.unwrap();
    assert_eq!(all.len(), 2);
    // Default entry: read, modify, reset.
    let def_q = p4v1::TableEntry { table_id: T_LPM, is_default_action: true, ..Default::default() };
    let got = read(&mut h, vec![E::TableEntry(def_q.clone())]).await.unwrap();
    assert_eq!(got.len(), 1);
    let d = te(&got[0]);
    assert!(d.is_default_action);
    let Some(p4v1::TableAction { r#type: Some(p4v1::table_action::Type::Action(a)) }) = &d.action else { panic!() };
    assert_eq!(a.action_id, A_DROP);
    let mut set_def = lpm_entry([0; 4], 0, &[7], &[1]);
    set_def.r#match.clear();
    set_def.is_default_action = true;
    write(&mut h, 3, vec![update(U::Modify, E::TableEntry(set_def))]).await.unwrap();
    let got = read(&mut h, vec![E::TableEntry(def_q.clone())]).await.unwrap();
    let Some(p4v1::TableAction { r#type: Some(p4v1::table_action::Type::Action(a)) }) = &te(&got[0]).action else { panic!() };
    assert_eq!(a.action_id, A_FORWARD);
    write(&mut h, 3, vec![update(U::Modify, E::TableEntry(def_q.clone()))]).await.unwrap();
    let got = read(&mut h, vec![E::TableEntry(def_q.clone())]).await.unwrap();
    let Some(p4v1::TableAction { r#type: Some(p4v1::table_action::Type::Action(a)) }) = &te(&got[0]).action else { panic!() };
    assert_eq!(a.action_id, A_DROP, "reset to the program's default");
    // INSERT of a default entry is refused.
    let e = write(&mut h, 3, vec![update(U::Insert, E::TableEntry(def_q.clone()))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::InvalidArgument as i32]);
    // Keyless table: set its default, inserts refused.
    let sid = p4v1::TableEntry {
        table_id: T_CFG,
        is_default_action: true,
        action: Some(p4v1::TableAction { r#type: Some(p4v1::table_action::Type::Action(p4v1::Action { action_id: A_SET_ID, params: vec![p4v1::action::Param { param_id: 1, value: vec![0x12, 0x34] }] })) }),
        ..Default::default()
    };
    write(&mut h, 3, vec![update(U::Modify, E::TableEntry(sid.clone()))]).await.unwrap();
    let mut ins = sid.clone();
    ins.is_default_action = false;
    let e = write(&mut h, 3, vec![update(U::Insert, E::TableEntry(ins))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::InvalidArgument as i32]);
    // Delete.
    write(&mut h, 3, vec![update(U::Delete, E::TableEntry(lpm_entry([10, 0, 1, 0], 24, &[], &[])))]).await.unwrap();
    let got = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: T_LPM, ..Default::default() })]).await.unwrap();
    assert_eq!(got.len(), 1);
}

#[tokio::test]
async fn write_error_codes() {
    let mut h = start().await;
    let _s = primary_with_pipeline(&mut h, 3).await;
    let ok = lpm_entry([10, 1, 0, 0], 16, &[1], &[1]);
    write(&mut h, 3, vec![update(U::Insert, E::TableEntry(ok.clone()))]).await.unwrap();

    let mut unknown_table = ok.clone();
    unknown_table.table_id = 0x0200_00ff;
    let mut wide_param = lpm_entry([10, 2, 0, 0], 16, &[2, 0], &[1]); // 512 does not fit bit<9>
    let _ = &mut wide_param;
    let wide_match = lpm_entry([10, 3, 0, 0], 16, &[1], &[1, 0, 0, 0, 0, 0, 0]); // 7 bytes for bit<48>
    let mut bad_prefix = lpm_entry([10, 4, 0, 1], 16, &[1], &[1]); // bits beyond the prefix
    let _ = &mut bad_prefix;
    let mut missing_param = lpm_entry([10, 5, 0, 0], 16, &[1], &[1]);
    if let Some(p4v1::TableAction { r#type: Some(p4v1::table_action::Type::Action(a)) }) = &mut missing_param.action {
        a.params.pop();
    }
    let mut bad_action = lpm_entry([10, 6, 0, 0], 16, &[1], &[1]);
    if let Some(p4v1::TableAction { r#type: Some(p4v1::table_action::Type::Action(a)) }) = &mut bad_action.action {
        a.action_id = A_SET_K;
    }
    let mut empty_value = lpm_entry([10, 7, 0, 0], 16, &[1], &[1]);
    if let Some(p4v1::field_match::FieldMatchType::Lpm(l)) = &mut empty_value.r#match[0].field_match_type {
        l.value.clear();
    }
    let mut with_prio = lpm_entry([10, 8, 0, 0], 16, &[1], &[1]);
    with_prio.priority = 5;
    let ups = vec![
        update(U::Insert, E::TableEntry(ok.clone())),                   // duplicate
        update(U::Delete, E::TableEntry(lpm_entry([10, 9, 0, 0], 16, &[], &[]))), // missing
        update(U::Insert, E::TableEntry(unknown_table)),
        update(U::Insert, E::TableEntry(wide_param)),
        update(U::Insert, E::TableEntry(wide_match)),
        update(U::Insert, E::TableEntry(bad_prefix)),
        update(U::Insert, E::TableEntry(missing_param)),
        update(U::Insert, E::TableEntry(bad_action)),
        update(U::Insert, E::TableEntry(empty_value)),
        update(U::Insert, E::TableEntry(with_prio)),
        update(U::Insert, E::TableEntry(lpm_entry([10, 10, 0, 0], 16, &[1], &[1]))), // fine
        update(U::Modify, E::TableEntry(lpm_entry([10, 11, 0, 0], 16, &[1], &[1]))), // missing
        p4v1::Update { r#type: 0, entity: Some(p4v1::Entity { entity: Some(E::TableEntry(ok.clone())) }) },
        p4v1::Update { r#type: U::Insert as i32, entity: None },
    ];
    let e = write(&mut h, 3, ups).await.unwrap_err();
    assert_eq!(e.code(), Code::Unknown);
    let c = |c: Code| c as i32;
    assert_eq!(
        batch_codes(&e),
        vec![
            c(Code::AlreadyExists),
            c(Code::NotFound),
            c(Code::NotFound),
            c(Code::OutOfRange),
            c(Code::OutOfRange),
            c(Code::InvalidArgument),
            c(Code::InvalidArgument),
            c(Code::InvalidArgument),
            c(Code::OutOfRange),
            c(Code::InvalidArgument),
            c(Code::Ok),
            c(Code::NotFound),
            c(Code::InvalidArgument),
            c(Code::InvalidArgument),
        ]
    );
    // The good one in the failed batch was applied (CONTINUE_ON_ERROR).
    let got = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: T_LPM, ..Default::default() })]).await.unwrap();
    assert_eq!(got.len(), 2);
    // Other atomicity modes are not implemented.
    let e = h
        .client
        .write(p4v1::WriteRequest {
            device_id: DEVICE,
            election_id: eid(3),
            atomicity: p4v1::write_request::Atomicity::RollbackOnError as i32,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented);
    // Unknown table in a Read.
    let e = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: 77, ..Default::default() })]).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
}

fn acl_entry(src: &[u8], mask: &[u8], proto: u8, prio: i32, cls: u8) -> p4v1::TableEntry {
    use p4v1::field_match::{Exact, FieldMatchType as F, Ternary};
    p4v1::TableEntry {
        table_id: T_ACL,
        r#match: vec![
            p4v1::FieldMatch { field_id: 1, field_match_type: Some(F::Ternary(Ternary { value: src.to_vec(), mask: mask.to_vec() })) },
            p4v1::FieldMatch { field_id: 2, field_match_type: Some(F::Exact(Exact { value: vec![proto] })) },
        ],
        action: Some(p4v1::TableAction {
            r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                action_id: A_SET_CLASS,
                params: vec![p4v1::action::Param { param_id: 1, value: vec![cls] }],
            })),
        }),
        priority: prio,
        ..Default::default()
    }
}

#[tokio::test]
async fn ternary_priorities_and_direct_counters() {
    let mut h = start().await;
    let _s = primary_with_pipeline(&mut h, 3).await;
    let e = write(&mut h, 3, vec![update(U::Insert, E::TableEntry(acl_entry(&[10, 0, 0, 0], &[255, 0, 0, 0], 6, 0, 1)))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::InvalidArgument as i32], "priority required");
    let e = write(&mut h, 3, vec![update(U::Insert, E::TableEntry(acl_entry(&[10, 0, 0, 1], &[255, 0, 0, 0], 6, 1, 1)))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::InvalidArgument as i32], "value outside mask");
    let e = write(&mut h, 3, vec![update(U::Insert, E::TableEntry(acl_entry(&[0], &[0], 6, 1, 1)))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::InvalidArgument as i32], "all-zero mask must be omitted");
    write(
        &mut h,
        3,
        vec![
            update(U::Insert, E::TableEntry(acl_entry(&[10, 0, 0, 0], &[255, 0, 0, 0], 6, 10, 1))),
            update(U::Insert, E::TableEntry(acl_entry(&[10, 0, 0, 0], &[255, 0, 0, 0], 6, 20, 2))),
        ],
    )
    .await
    .unwrap();
    // Don't-care ternary: the field omitted.
    let mut dc = acl_entry(&[0], &[0], 17, 5, 3);
    dc.r#match.remove(0);
    write(&mut h, 3, vec![update(U::Insert, E::TableEntry(dc.clone()))]).await.unwrap();
    let got = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: T_ACL, ..Default::default() })]).await.unwrap();
    assert_eq!(got.len(), 3);
    assert!(got.iter().any(|e| te(e).r#match.len() == 1 && te(e).priority == 5), "don't-care omitted on read");
    // Priority filter.
    let got = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: T_ACL, priority: 20, ..Default::default() })]).await.unwrap();
    assert_eq!(got.len(), 1);
    // Direct counter: write, read (explicitly and with the entry).
    let key = acl_entry(&[10, 0, 0, 0], &[255, 0, 0, 0], 6, 10, 0);
    let dce = p4v1::DirectCounterEntry {
        table_entry: Some(p4v1::TableEntry { action: None, ..key.clone() }),
        data: Some(p4v1::CounterData { byte_count: 1500, packet_count: 1 }),
    };
    write(&mut h, 3, vec![update(U::Modify, E::DirectCounterEntry(dce.clone()))]).await.unwrap();
    let got = read(&mut h, vec![E::DirectCounterEntry(p4v1::DirectCounterEntry { table_entry: Some(key.clone()), data: None })]).await.unwrap();
    let Some(E::DirectCounterEntry(d)) = &got[0].entity else { panic!() };
    assert_eq!(d.data, Some(p4v1::CounterData { byte_count: 1500, packet_count: 1 }));
    let got = read(&mut h, vec![E::TableEntry(p4v1::TableEntry { table_id: T_ACL, priority: 10, counter_data: Some(Default::default()), ..Default::default() })]).await.unwrap();
    assert_eq!(te(&got[0]).counter_data, Some(p4v1::CounterData { byte_count: 1500, packet_count: 1 }));
    let e = write(&mut h, 3, vec![update(U::Insert, E::DirectCounterEntry(dce))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::InvalidArgument as i32]);
    let missing = p4v1::DirectCounterEntry { table_entry: Some(acl_entry(&[11, 0, 0, 0], &[255, 0, 0, 0], 6, 10, 0)), data: None };
    let e = read(&mut h, vec![E::DirectCounterEntry(missing)]).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
}

#[tokio::test]
async fn counters_and_registers() {
    let mut h = start().await;
    let _s = primary_with_pipeline(&mut h, 3).await;
    let ce = |idx: Option<i64>, b: i64, p: i64| {
        E::CounterEntry(p4v1::CounterEntry {
            counter_id: C_PORT,
            index: idx.map(|i| p4v1::Index { index: i }),
            data: Some(p4v1::CounterData { byte_count: b, packet_count: p }),
        })
    };
    write(&mut h, 3, vec![update(U::Modify, ce(Some(3), 300, 3))]).await.unwrap();
    let got = read(&mut h, vec![E::CounterEntry(p4v1::CounterEntry { counter_id: C_PORT, index: Some(p4v1::Index { index: 3 }), data: None })]).await.unwrap();
    let Some(E::CounterEntry(c)) = &got[0].entity else { panic!() };
    assert_eq!(c.data, Some(p4v1::CounterData { byte_count: 300, packet_count: 3 }));
    let all = read(&mut h, vec![E::CounterEntry(p4v1::CounterEntry { counter_id: C_PORT, ..Default::default() })]).await.unwrap();
    assert_eq!(all.len(), 512, "wildcard index");
    let all = read(&mut h, vec![E::CounterEntry(Default::default())]).await.unwrap();
    assert_eq!(all.len(), 512, "wildcard counter id");
    for unknown in [E::CounterEntry(p4v1::CounterEntry { counter_id: 5, ..Default::default() }),
                    E::RegisterEntry(p4v1::RegisterEntry { register_id: 5, ..Default::default() })] {
        let e = read(&mut h, vec![unknown]).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
    }
    let e = read(&mut h, vec![E::CounterEntry(p4v1::CounterEntry { counter_id: C_PORT, index: Some(p4v1::Index { index: 512 }), data: None })]).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::OutOfRange, "{e:?}");
    // No index: every cell.
    write(&mut h, 3, vec![update(U::Modify, ce(None, 0, 0))]).await.unwrap();
    let e = write(&mut h, 3, vec![update(U::Modify, ce(Some(512), 0, 0)), update(U::Modify, ce(Some(-1), 0, 0)), update(U::Insert, ce(Some(1), 0, 0))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::OutOfRange as i32, Code::InvalidArgument as i32, Code::InvalidArgument as i32]);

    let re = |idx: Option<i64>, v: &[u8]| {
        E::RegisterEntry(p4v1::RegisterEntry {
            register_id: R_SAMPLE,
            index: idx.map(|i| p4v1::Index { index: i }),
            data: Some(p4v1::P4Data { data: Some(p4v1::p4_data::Data::Bitstring(v.to_vec())) }),
        })
    };
    write(&mut h, 3, vec![update(U::Modify, re(Some(2), &[0, 0, 1, 0]))]).await.unwrap();
    let got = read(&mut h, vec![E::RegisterEntry(p4v1::RegisterEntry { register_id: R_SAMPLE, ..Default::default() })]).await.unwrap();
    assert_eq!(got.len(), 4);
    let Some(E::RegisterEntry(r)) = &got[2].entity else { panic!() };
    assert_eq!(r.data, Some(p4v1::P4Data { data: Some(p4v1::p4_data::Data::Bitstring(vec![1, 0])) }));
    let e = write(&mut h, 3, vec![update(U::Modify, re(Some(4), &[1])), update(U::Modify, re(Some(0), &[1, 0, 0, 0, 0]))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::OutOfRange as i32, Code::OutOfRange as i32]);
    let e = write(&mut h, 3, vec![update(U::Modify, E::RegisterEntry(p4v1::RegisterEntry { register_id: 5, ..Default::default() }))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::NotFound as i32]);
}

#[tokio::test]
async fn replication_engine() {
    use p4v1::packet_replication_engine_entry::Type as T;
    let mut h = start().await;
    let _s = primary_with_pipeline(&mut h, 3).await;
    let rep = |port: u32, inst: u32| p4v1::Replica { instance: inst, backup_replicas: vec![], port_kind: Some(p4v1::replica::PortKind::Port(port.to_be_bytes().to_vec())) };
    let cs = |reps: Vec<p4v1::Replica>, len: i32| {
        E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry {
            r#type: Some(T::CloneSessionEntry(p4v1::CloneSessionEntry { session_id: 100, replicas: reps, class_of_service: 0, packet_length_bytes: len })),
        })
    };
    write(&mut h, 3, vec![update(U::Insert, cs(vec![rep(3, 0)], 94))]).await.unwrap();
    let e = write(&mut h, 3, vec![update(U::Insert, cs(vec![rep(3, 0)], 94))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::AlreadyExists as i32]);
    let (reps, trunc) = h.service.committed().unwrap().state.clone_session_get(100).unwrap();
    assert_eq!((reps[0].port, trunc), (3, Some(94)));
    write(&mut h, 3, vec![update(U::Modify, cs(vec![rep(4, 1)], 0))]).await.unwrap();
    let got = read(&mut h, vec![E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry { r#type: Some(T::CloneSessionEntry(Default::default())) })]).await.unwrap();
    assert_eq!(got.len(), 1);
    let Some(E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry { r#type: Some(T::CloneSessionEntry(c)) })) = &got[0].entity else { panic!() };
    assert_eq!(c.packet_length_bytes, 0);
    assert_eq!(c.replicas, vec![p4v1::Replica { instance: 1, backup_replicas: vec![], port_kind: Some(p4v1::replica::PortKind::Port(vec![4])) }]);
    write(&mut h, 3, vec![update(U::Delete, cs(vec![], 0))]).await.unwrap();
    let e = write(&mut h, 3, vec![update(U::Delete, cs(vec![], 0))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::NotFound as i32]);

    let mg = |id: u32, reps: Vec<p4v1::Replica>| {
        E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry {
            r#type: Some(T::MulticastGroupEntry(p4v1::MulticastGroupEntry { multicast_group_id: id, replicas: reps, metadata: vec![] })),
        })
    };
    write(&mut h, 3, vec![update(U::Insert, mg(1, vec![rep(1, 0), rep(2, 0)]))]).await.unwrap();
    let e = write(&mut h, 3, vec![update(U::Insert, mg(0, vec![])), update(U::Modify, mg(2, vec![])), update(U::Insert, mg(3, vec![rep(600, 0)]))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::InvalidArgument as i32, Code::NotFound as i32, Code::OutOfRange as i32]);
    let got = read(&mut h, vec![E::PacketReplicationEngineEntry(Default::default())]).await.unwrap();
    assert_eq!(got.len(), 1, "all PRE entries: the one group");
}

fn pre_entity(e: &p4v1::Entity) -> &p4v1::packet_replication_engine_entry::Type {
    match &e.entity {
        Some(E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry { r#type: Some(t) })) => t,
        other => panic!("not a replication engine entry: {other:?}"),
    }
}

/// A replica in the deprecated `uint32 egress_port` form (P4Runtime < 1.4).
fn rep_u32(port: u32, instance: u32) -> p4v1::Replica {
    #[allow(deprecated)]
    let kind = p4v1::replica::PortKind::EgressPort(port);
    p4v1::Replica { instance, backup_replicas: vec![], port_kind: Some(kind) }
}

/// A replica in the `bytes port` form (P4Runtime ≥ 1.4), bytes as given.
fn rep_bytes(port: &[u8], instance: u32) -> p4v1::Replica {
    p4v1::Replica { instance, backup_replicas: vec![], port_kind: Some(p4v1::replica::PortKind::Port(port.to_vec())) }
}

/// Spec "read-write symmetry": a replica reads back in the form it was
/// written, `egress_port` or `port`, for clone sessions and multicast groups,
/// through INSERT, MODIFY, wildcard reads and RECONCILE_AND_COMMIT.
#[tokio::test]
async fn replicas_read_back_in_the_form_written() {
    use p4v1::packet_replication_engine_entry::Type as T;
    let mut h = start().await;
    let _s = primary_with_pipeline(&mut h, 3).await;
    let pre = |t: T| E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry { r#type: Some(t) });
    let cs = |id: u32, replicas: Vec<p4v1::Replica>| p4v1::CloneSessionEntry {
        session_id: id,
        replicas,
        class_of_service: 0,
        packet_length_bytes: 128,
    };
    let mg = |id: u32, replicas: Vec<p4v1::Replica>, metadata: &[u8]| p4v1::MulticastGroupEntry {
        multicast_group_id: id,
        replicas,
        metadata: metadata.to_vec(),
    };
    // Every form in one entry, port 0 in both; canonical bytes throughout.
    let mixed = vec![rep_u32(2, 0), rep_bytes(&[3], 1), rep_bytes(&[0], 2), rep_u32(0, 3), rep_u32(511, 4)];
    let only_u32 = vec![rep_u32(1, 0), rep_u32(2, 0)];
    let only_bytes = vec![rep_bytes(&[1], 0), rep_bytes(&[1, 0xff], 7)];
    let written = vec![
        T::CloneSessionEntry(cs(10, mixed.clone())),
        T::CloneSessionEntry(cs(11, only_u32.clone())),
        T::CloneSessionEntry(cs(12, only_bytes.clone())),
        T::MulticastGroupEntry(mg(1, mixed.clone(), b"")),
        T::MulticastGroupEntry(mg(2, only_u32.clone(), b"\x00opaque\xff")),
        T::MulticastGroupEntry(mg(3, only_bytes.clone(), b"m")),
    ];
    write(&mut h, 3, written.iter().cloned().map(|t| update(U::Insert, pre(t))).collect()).await.unwrap();
    let read_one = |t: &T| match t {
        T::CloneSessionEntry(c) => T::CloneSessionEntry(p4v1::CloneSessionEntry { session_id: c.session_id, ..Default::default() }),
        T::MulticastGroupEntry(m) => T::MulticastGroupEntry(p4v1::MulticastGroupEntry { multicast_group_id: m.multicast_group_id, ..Default::default() }),
    };
    for w in &written {
        let got = read(&mut h, vec![pre(read_one(w))]).await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(pre_entity(&got[0]), w, "read by id");
    }
    // Wildcard: every entry, each in its own forms.
    let all = read(&mut h, vec![E::PacketReplicationEngineEntry(Default::default())]).await.unwrap();
    assert_eq!(all.iter().map(pre_entity).cloned().collect::<Vec<_>>(), written, "wildcard read");

    // Padded bytes read back canonical (spec: bytestrings); the form stays.
    write(&mut h, 3, vec![update(U::Modify, pre(T::CloneSessionEntry(cs(10, vec![rep_bytes(&[0, 0, 0, 5], 9)]))))])
        .await
        .unwrap();
    let got = read(&mut h, vec![pre(read_one(&written[0]))]).await.unwrap();
    assert_eq!(pre_entity(&got[0]), &T::CloneSessionEntry(cs(10, vec![rep_bytes(&[5], 9)])));
    // MODIFY switches a replica's form: the last write wins.
    write(&mut h, 3, vec![update(U::Modify, pre(T::MulticastGroupEntry(mg(3, vec![rep_u32(1, 0), rep_bytes(&[2], 0)], b""))))])
        .await
        .unwrap();
    let got = read(&mut h, vec![pre(read_one(&written[5]))]).await.unwrap();
    assert_eq!(pre_entity(&got[0]), &T::MulticastGroupEntry(mg(3, vec![rep_u32(1, 0), rep_bytes(&[2], 0)], b"")));
    // The same (port, instance) in both forms is one replica given twice.
    let e = write(&mut h, 3, vec![update(U::Insert, pre(T::MulticastGroupEntry(mg(4, vec![rep_u32(6, 1), rep_bytes(&[6], 1)], b""))))])
        .await
        .unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::InvalidArgument as i32]);
    // The engine replicates the same either way.
    let st = h.service.committed().unwrap().state.clone();
    assert_eq!(st.mcast_group_get(3).unwrap().iter().map(|r| (r.port, r.rid)).collect::<Vec<_>>(), vec![(1, 0), (2, 0)]);

    // RECONCILE_AND_COMMIT carries the forms over with the sessions/groups.
    let before = read(&mut h, vec![E::PacketReplicationEngineEntry(Default::default())]).await.unwrap();
    h.client
        .set_forwarding_pipeline_config(set_cfg(p4v1::set_forwarding_pipeline_config_request::Action::ReconcileAndCommit, 3, Some(config(8))))
        .await
        .unwrap();
    let after = read(&mut h, vec![E::PacketReplicationEngineEntry(Default::default())]).await.unwrap();
    assert_eq!(after, before);
    // DELETE forgets them.
    write(&mut h, 3, vec![update(U::Delete, pre(T::CloneSessionEntry(cs(10, vec![])))), update(U::Delete, pre(T::MulticastGroupEntry(mg(1, vec![], b""))))])
        .await
        .unwrap();
    let left = read(&mut h, vec![E::PacketReplicationEngineEntry(Default::default())]).await.unwrap();
    assert_eq!(left.len(), before.len() - 2);
}

/// A class of service the engine does not have is refused, not dropped
/// (it would read back as 0); PI answers the same.
#[tokio::test]
async fn clone_session_class_of_service_is_unimplemented() {
    use p4v1::packet_replication_engine_entry::Type as T;
    let mut h = start().await;
    let _s = primary_with_pipeline(&mut h, 3).await;
    let cs = E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry {
        r#type: Some(T::CloneSessionEntry(p4v1::CloneSessionEntry {
            session_id: 5,
            replicas: vec![rep_u32(1, 0)],
            class_of_service: 2,
            packet_length_bytes: 0,
        })),
    });
    let e = write(&mut h, 3, vec![update(U::Insert, cs)]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::Unimplemented as i32]);
    assert!(h.service.committed().unwrap().state.clone_session_get(5).is_none());
}

/// Sends StreamChannel messages as raw bytes, so a test can send one that
/// is not a StreamMessageRequest; answers decode as usual.
#[derive(Clone, Copy, Default)]
struct RawRequestCodec;

struct RawEncoder;

impl tonic::codec::Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut tonic::codec::EncodeBuf<'_>) -> Result<(), tonic::Status> {
        use prost::bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Codec for RawRequestCodec {
    type Encode = Vec<u8>;
    type Decode = p4v1::StreamMessageResponse;
    type Encoder = RawEncoder;
    type Decoder = tonic_prost::ProstDecoder<p4v1::StreamMessageResponse>;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> Self::Decoder {
        tonic_prost::ProstDecoder::default()
    }
}

/// A StreamChannel of its own connection whose requests are raw bytes.
async fn open_raw_stream(
    addr: std::net::SocketAddr,
) -> (tokio::sync::mpsc::Sender<Vec<u8>>, tonic::Streaming<p4v1::StreamMessageResponse>) {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/p4.v1.P4Runtime/StreamChannel");
    let inbound = grpc
        .streaming(tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(rx)), path, RawRequestCodec)
        .await
        .unwrap()
        .into_inner();
    (tx, inbound)
}

async fn next_raw(
    s: &mut tonic::Streaming<p4v1::StreamMessageResponse>,
) -> Result<Option<p4v1::StreamMessageResponse>, tonic::Status> {
    tokio::time::timeout(std::time::Duration::from_secs(5), s.message()).await.expect("an answer within 5 s")
}

/// A StreamChannel message that does not decode ends the stream with
/// INVALID_ARGUMENT and a message, never with OK; the controllers left are
/// told the primary is gone.
#[tokio::test]
async fn undecodable_stream_message_ends_the_stream_with_invalid_argument() {
    use prost::Message;
    let mut h = start().await;
    let (tx, mut inbound) = open_raw_stream(h.addr).await;
    let arbitration = p4v1::StreamMessageRequest {
        update: Some(p4v1::stream_message_request::Update::Arbitration(p4v1::MasterArbitrationUpdate {
            device_id: DEVICE,
            election_id: eid(2),
            ..Default::default()
        })),
    };
    tx.send(arbitration.encode_to_vec()).await.unwrap();
    match next_raw(&mut inbound).await {
        Ok(Some(p4v1::StreamMessageResponse { update: Some(p4v1::stream_message_response::Update::Arbitration(a)) })) => {
            assert_eq!(a.status.map(|s| s.code), Some(Code::Ok as i32), "raw client is primary")
        }
        other => panic!("expected an arbitration update, got {other:?}"),
    }
    let mut backup = open_stream(&mut h.client).await;
    backup.arbitrate(DEVICE, 1).await;
    assert_eq!(backup.arbitration_code().await, Code::AlreadyExists as i32);

    // Field 1 (arbitration), length 5, but only one byte follows.
    tx.send(vec![0x0a, 0x05, 0x01]).await.unwrap();
    match next_raw(&mut inbound).await {
        Err(st) => {
            assert_eq!(st.code(), Code::InvalidArgument, "{st:?}");
            assert!(st.message().contains("StreamMessageRequest"), "the message says why: {}", st.message());
        }
        Ok(other) => panic!("expected INVALID_ARGUMENT, got {other:?} (a close without a status reads as OK)"),
    }
    // The primary is gone; the backup is told so.
    assert_eq!(backup.arbitration_code().await, Code::NotFound as i32);

    // Undecodable as the very first message: the same answer.
    let (tx2, mut inbound2) = open_raw_stream(h.addr).await;
    tx2.send(vec![0xff; 16]).await.unwrap();
    match next_raw(&mut inbound2).await {
        Err(st) => assert_eq!(st.code(), Code::InvalidArgument, "{st:?}"),
        Ok(other) => panic!("expected INVALID_ARGUMENT, got {other:?}"),
    }
}

#[tokio::test]
async fn arbitration() {
    let mut h = start().await;
    let mut a = open_stream(&mut h.client).await;
    a.arbitrate(DEVICE, 1).await;
    assert_eq!(a.arbitration_code().await, Code::Ok as i32);
    let mut b = open_stream(&mut h.client).await;
    b.arbitrate(DEVICE, 2).await;
    // b takes over: both are told.
    assert_eq!(b.arbitration_code().await, Code::Ok as i32);
    assert_eq!(a.arbitration_code().await, Code::AlreadyExists as i32);
    h.client
        .set_forwarding_pipeline_config(set_cfg(p4v1::set_forwarding_pipeline_config_request::Action::VerifyAndCommit, 2, Some(config(1))))
        .await
        .unwrap();
    let e = write(&mut h, 1, vec![update(U::Insert, E::TableEntry(lpm_entry([10, 0, 0, 0], 8, &[1], &[1])))]).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    let e = h.client.write(p4v1::WriteRequest { device_id: DEVICE, election_id: None, ..Default::default() }).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    write(&mut h, 2, vec![update(U::Insert, E::TableEntry(lpm_entry([10, 0, 0, 0], 8, &[1], &[1])))]).await.unwrap();
    // A lower id joining is a backup, told alone.
    let mut c = open_stream(&mut h.client).await;
    c.arbitrate(DEVICE, 0).await;
    assert_eq!(c.arbitration_code().await, Code::AlreadyExists as i32);
    // The same election id as a live controller ends that stream.
    let mut d = open_stream(&mut h.client).await;
    d.arbitrate(DEVICE, 2).await;
    match d.next().await {
        Some(Err(st)) => assert_eq!(st.code(), Code::InvalidArgument),
        other => panic!("expected INVALID_ARGUMENT, got {other:?}"),
    }
    // The primary leaves: the others learn there is none.
    drop(b);
    assert_eq!(a.arbitration_code().await, Code::NotFound as i32);
    assert_eq!(c.arbitration_code().await, Code::NotFound as i32);
    let e = write(&mut h, 2, vec![]).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // a re-arbitrates with a higher id and becomes primary.
    a.arbitrate(DEVICE, 3).await;
    assert_eq!(a.arbitration_code().await, Code::Ok as i32);
    write(&mut h, 3, vec![]).await.unwrap();
    // Packet-out: this program has no controller header.
    a.tx.send(p4v1::StreamMessageRequest {
        update: Some(p4v1::stream_message_request::Update::Packet(p4v1::PacketOut { payload: vec![1, 2, 3], metadata: vec![] })),
    })
    .await
    .unwrap();
    loop {
        match a.next().await {
            Some(Ok(p4v1::StreamMessageResponse { update: Some(p4v1::stream_message_response::Update::Error(e)) })) => {
                assert_eq!(e.canonical_code, Code::FailedPrecondition as i32);
                assert!(matches!(e.details, Some(p4v1::stream_error::Details::PacketOut(_))));
                break;
            }
            Some(Ok(_)) => continue,
            other => panic!("expected a stream error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn many_entries_stream_in_chunks() {
    let mut h = start().await;
    let _s = primary_with_pipeline(&mut h, 3).await;
    let ups: Vec<_> = (0..1024u32)
        .map(|i| update(U::Insert, E::TableEntry(lpm_entry([10, (i >> 8) as u8, i as u8, 0], 24, &[1], &[1]))))
        .collect();
    write(&mut h, 3, ups).await.unwrap();
    // Table full (size 1024).
    let e = write(&mut h, 3, vec![update(U::Insert, E::TableEntry(lpm_entry([11, 0, 0, 0], 24, &[1], &[1])))]).await.unwrap_err();
    assert_eq!(batch_codes(&e), vec![Code::ResourceExhausted as i32]);
    let req = p4v1::ReadRequest {
        device_id: DEVICE,
        entities: vec![p4v1::Entity { entity: Some(E::TableEntry(p4v1::TableEntry { table_id: T_LPM, ..Default::default() })) }],
        ..Default::default()
    };
    let mut s = h.client.read(req).await.unwrap().into_inner();
    let mut msgs = 0;
    let mut n = 0;
    while let Some(r) = s.message().await.unwrap() {
        msgs += 1;
        n += r.entities.len();
    }
    assert_eq!(n, 1024);
    assert!(msgs >= 2);
}

/// Random writes and reads: every answer is a gRPC status, the server never
/// falls over.
#[tokio::test]
async fn random_requests_do_not_crash() {
    use prost::Message;
    let mut h = start().await;
    let _s = primary_with_pipeline(&mut h, 3).await;
    let mut rng = ports::Rng::new(12345);
    let tables = [T_LPM, T_ACL, T_ECN, T_CFG, 0, 1, 0xffff_ffff];
    let actions = [A_NOACTION, A_FORWARD, A_DROP, A_SET_K, A_SET_CLASS, A_SET_ID, 0, 9];
    let rb = |rng: &mut ports::Rng, max: usize| -> Vec<u8> {
        let n = (rng.next_u64() as usize) % (max + 1);
        (0..n).map(|_| rng.next_u64() as u8).collect()
    };
    for round in 0..300 {
        let mut updates = vec![];
        for _ in 0..(rng.next_u64() % 6) {
            use p4v1::field_match::FieldMatchType as F;
            let mut fm = vec![];
            for _ in 0..(rng.next_u64() % 3) {
                let kind = match rng.next_u64() % 6 {
                    0 => Some(F::Exact(p4v1::field_match::Exact { value: rb(&mut rng, 6) })),
                    1 => Some(F::Lpm(p4v1::field_match::Lpm { value: rb(&mut rng, 6), prefix_len: (rng.next_u64() % 40) as i32 - 2 })),
                    2 => Some(F::Ternary(p4v1::field_match::Ternary { value: rb(&mut rng, 5), mask: rb(&mut rng, 5) })),
                    3 => Some(F::Range(p4v1::field_match::Range { low: rb(&mut rng, 3), high: rb(&mut rng, 3) })),
                    4 => Some(F::Optional(p4v1::field_match::Optional { value: rb(&mut rng, 3) })),
                    _ => None,
                };
                fm.push(p4v1::FieldMatch { field_id: (rng.next_u64() % 4) as u32, field_match_type: kind });
            }
            let params = (0..rng.next_u64() % 3)
                .map(|_| p4v1::action::Param { param_id: (rng.next_u64() % 4) as u32, value: rb(&mut rng, 8) })
                .collect();
            let entry = p4v1::TableEntry {
                table_id: tables[(rng.next_u64() % tables.len() as u64) as usize],
                r#match: fm,
                action: if rng.next_u64() % 5 == 0 {
                    None
                } else {
                    Some(p4v1::TableAction {
                        r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                            action_id: actions[(rng.next_u64() % actions.len() as u64) as usize],
                            params,
                        })),
                    })
                },
                priority: (rng.next_u64() % 4) as i32 - 1,
                is_default_action: rng.next_u64() % 7 == 0,
                counter_data: if rng.next_u64() % 4 == 0 { Some(p4v1::CounterData { byte_count: rng.next_u64() as i64, packet_count: 1 }) } else { None },
                ..Default::default()
            };
            let ent = match rng.next_u64() % 8 {
                0 => E::CounterEntry(p4v1::CounterEntry {
                    counter_id: [C_PORT, 0, 3][(rng.next_u64() % 3) as usize],
                    index: Some(p4v1::Index { index: (rng.next_u64() % 1100) as i64 - 10 }),
                    data: Some(p4v1::CounterData { byte_count: rng.next_u64() as i64, packet_count: rng.next_u64() as i64 }),
                }),
                1 => E::RegisterEntry(p4v1::RegisterEntry {
                    register_id: [R_SAMPLE, 0][(rng.next_u64() % 2) as usize],
                    index: Some(p4v1::Index { index: (rng.next_u64() % 8) as i64 - 2 }),
                    data: Some(p4v1::P4Data { data: Some(p4v1::p4_data::Data::Bitstring(rb(&mut rng, 6))) }),
                }),
                2 => E::DirectCounterEntry(p4v1::DirectCounterEntry { table_entry: Some(entry), data: Some(Default::default()) }),
                3 => E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry {
                    r#type: Some(p4v1::packet_replication_engine_entry::Type::CloneSessionEntry(p4v1::CloneSessionEntry {
                        session_id: (rng.next_u64() % 4) as u32,
                        replicas: vec![p4v1::Replica { instance: (rng.next_u64() % 70000) as u32, backup_replicas: vec![], port_kind: Some(p4v1::replica::PortKind::Port(rb(&mut rng, 5))) }],
                        class_of_service: 0,
                        packet_length_bytes: (rng.next_u64() % 200) as i32 - 50,
                    })),
                }),
                4 => E::MeterEntry(Default::default()),
                _ => E::TableEntry(entry),
            };
            let ty = (rng.next_u64() % 5) as i32;
            updates.push(p4v1::Update { r#type: ty, entity: Some(p4v1::Entity { entity: Some(ent) }) });
        }
        // Round-trip through bytes with random corruption now and then.
        let mut req = p4v1::WriteRequest { device_id: DEVICE, election_id: eid(3), updates, ..Default::default() };
        if round % 10 == 0 {
            let mut b = req.encode_to_vec();
            if !b.is_empty() {
                let i = (rng.next_u64() as usize) % b.len();
                b[i] ^= 0x5a;
            }
            if let Ok(r) = p4v1::WriteRequest::decode(b.as_slice()) {
                req = r;
                req.device_id = DEVICE;
                req.election_id = eid(3);
            }
        }
        let _ = h.client.write(req.clone()).await;
        // Read back what the writes named.
        let entities: Vec<_> = req.updates.iter().filter_map(|u| u.entity.clone()).collect();
        let _ = h.client.read(p4v1::ReadRequest { device_id: DEVICE, entities, ..Default::default() }).await;
    }
    // Still alive and consistent.
    read(&mut h, vec![E::TableEntry(Default::default())]).await.unwrap();
    h.client.capabilities(p4v1::CapabilitiesRequest::default()).await.unwrap();
}

/// The real program, when p4c's output is at hand (p4src/build/ or
/// P4CC_CC_JSON / P4CC_CC_P4INFO): push it, route, set K, a clone session.
#[tokio::test]
async fn cc_switch_pipeline_when_compiled() {
    use prost::Message;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../p4src/build");
    let json = std::env::var("P4CC_CC_JSON").map(std::path::PathBuf::from).unwrap_or(root.join("cc_switch.json"));
    let info = std::env::var("P4CC_CC_P4INFO").map(std::path::PathBuf::from).unwrap_or(root.join("cc_switch.p4info.bin"));
    let (Ok(json), Ok(info)) = (std::fs::read(&json), std::fs::read(&info)) else {
        eprintln!("skipped: no compiled cc_switch (p4src/build/cc_switch.json + .p4info.bin)");
        return;
    };
    let info = p4rt::proto::p4::config::v1::P4Info::decode(info.as_slice()).unwrap();
    let id = |v: &[Option<&p4rt::proto::p4::config::v1::Preamble>], n: &str| {
        v.iter().flatten().find(|p| p.name == n).unwrap_or_else(|| panic!("{n} not in P4Info")).id
    };
    let tables: Vec<_> = info.tables.iter().map(|t| t.preamble.as_ref()).collect();
    let actions: Vec<_> = info.actions.iter().map(|t| t.preamble.as_ref()).collect();
    let lpm = id(&tables, "CcIngress.forwarding.ipv4_lpm");
    let fwd = id(&actions, "CcIngress.forwarding.forward");
    let ecn = id(&tables, "CcEgress.ecn.ecn_threshold");
    let set_k = id(&actions, "CcEgress.ecn.set_threshold");

    let mut h = start().await;
    let mut s = open_stream(&mut h.client).await;
    s.arbitrate(DEVICE, 1).await;
    s.arbitration_code().await;
    h.client
        .set_forwarding_pipeline_config(set_cfg(
            p4v1::set_forwarding_pipeline_config_request::Action::VerifyAndCommit,
            1,
            Some(p4v1::ForwardingPipelineConfig { p4info: Some(info.clone()), p4_device_config: json, cookie: None }),
        ))
        .await
        .unwrap();
    let mut route = lpm_entry([10, 0, 2, 0], 24, &[2], &[2, 0x11, 0x22, 0x33, 0x44, 0x55]);
    route.table_id = lpm;
    if let Some(p4v1::TableAction { r#type: Some(p4v1::table_action::Type::Action(a)) }) = &mut route.action {
        a.action_id = fwd;
    }
    let k = p4v1::TableEntry {
        table_id: ecn,
        r#match: vec![p4v1::FieldMatch {
            field_id: 1,
            field_match_type: Some(p4v1::field_match::FieldMatchType::Exact(p4v1::field_match::Exact { value: vec![2] })),
        }],
        action: Some(p4v1::TableAction {
            r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                action_id: set_k,
                params: vec![p4v1::action::Param { param_id: 1, value: vec![20] }],
            })),
        }),
        ..Default::default()
    };
    let cs = E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry {
        r#type: Some(p4v1::packet_replication_engine_entry::Type::CloneSessionEntry(p4v1::CloneSessionEntry {
            session_id: 100,
            replicas: vec![p4v1::Replica { instance: 0, backup_replicas: vec![], port_kind: Some(p4v1::replica::PortKind::Port(vec![3])) }],
            class_of_service: 0,
            packet_length_bytes: 94,
        })),
    });
    write(&mut h, 1, vec![update(U::Insert, E::TableEntry(route.clone())), update(U::Insert, E::TableEntry(k)), update(U::Insert, cs)])
        .await
        .unwrap();
    let got = read(&mut h, vec![E::TableEntry(Default::default())]).await.unwrap();
    assert_eq!(got.len(), 2);
    assert!(got.iter().any(|e| te(e).table_id == lpm && te(e).action == route.action));
    // Every counter of the program reads.
    let counters = read(&mut h, vec![E::CounterEntry(Default::default())]).await.unwrap();
    assert!(counters.len() >= 512);
}
