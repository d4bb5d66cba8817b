//! A simulated switch: p4cc-node's packet path on the virtual clock,
//! serving the same P4Runtime service and admin API as the embedded
//! target, so the controller programs it exactly as it programs p4cc-switch.

use crate::SimError;
use node::admin::{router, Admin};
use node::{PortShared, Shared, SwitchCore};
use p4rt::{P4RuntimeService, PipelineSlot};
use ports::PortSettings;
use std::net::SocketAddr;
use std::sync::Arc;

pub struct SimSwitch {
    pub name: String,
    pub device_id: u64,
    pub core: SwitchCore,
    pub shared: Arc<Shared>,
    pub grpc_addr: SocketAddr,
    pub admin_addr: SocketAddr,
    /// When the event loop will next advance this switch.
    pub scheduled: Option<u64>,
}

impl SimSwitch {
    /// A bare switch with `ports` (number, the name shown for its "interface"),
    /// its P4Runtime and admin servers spawned on `rt`.
    pub fn start(
        rt: &tokio::runtime::Runtime,
        name: &str,
        device_id: u64,
        ports: &[(u32, String)],
        seed: u64,
    ) -> Result<SimSwitch, SimError> {
        let shared = Arc::new(
            Shared::new(ports.iter().map(|(n, i)| Arc::new(PortShared::new(*n, i.clone(), PortSettings::default()))).collect())
                .map_err(|e| SimError::Setup(format!("switch {name}: {e}")))?,
        );
        let slot = Arc::new(PipelineSlot::default());
        let service = P4RuntimeService::new(device_id, slot.clone(), None, None);
        let core = SwitchCore::new(shared.clone(), slot, seed, None, Some(service.clone()));
        let bind = |what: &str| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.set_nonblocking(true).map(|_| l))
                .map_err(|e| SimError::Setup(format!("switch {name}: cannot listen ({what}): {e}")))
        };
        let (grpc, admin) = (bind("P4Runtime")?, bind("admin")?);
        let grpc_addr = grpc.local_addr().map_err(|e| SimError::Setup(e.to_string()))?;
        let admin_addr = admin.local_addr().map_err(|e| SimError::Setup(e.to_string()))?;
        let adm = Admin { shared: shared.clone(), p4rt: Some(service.clone()), device_id };
        rt.spawn(async move {
            let Ok(l) = tokio::net::TcpListener::from_std(grpc) else { return };
            let _ = tonic::transport::Server::builder()
                .add_service(service.into_server())
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(l))
                .await;
        });
        rt.spawn(async move {
            let Ok(l) = tokio::net::TcpListener::from_std(admin) else { return };
            let _ = axum::serve(l, router(adm)).await;
        });
        Ok(SimSwitch { name: name.to_string(), device_id, core, shared, grpc_addr, admin_addr, scheduled: None })
    }

    /// What `p4cc_control.program.Endpoint` takes.
    pub fn endpoint(&self) -> serde_json::Value {
        let ifaces: serde_json::Map<String, serde_json::Value> =
            self.shared.ports.iter().map(|p| (p.port.to_string(), p.iface.clone().into())).collect();
        serde_json::json!({
            "name": self.name, "target": "sim", "grpc_addr": self.grpc_addr.to_string(),
            "device_id": self.device_id, "admin_addr": self.admin_addr.to_string(), "port_ifaces": ifaces,
        })
    }
}
