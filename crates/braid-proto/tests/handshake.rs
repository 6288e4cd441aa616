//! The handshake: parameter negotiation between a client and a server, delivered directly.

use braid_proto::{Connection, ConnectionConfig, Instant};

/// A client asking for huge blocks gets the server's limits, and both ends agree on them (the
/// server's block window is its mode's: braid keeps more blocks open than the default).
#[test]
fn server_caps_the_clients_code_parameters() {
    use braid_proto::wire::TransportParams;
    let greedy = ConnectionConfig {
        params: TransportParams {
            symbol_size: 1200,
            max_block_len: 1024,
            blocks_in_flight: 64,
            ..TransportParams::default()
        },
        ..ConnectionConfig::default()
    };
    let mut client = Connection::client(greedy, Instant::ZERO, 3);
    let mut server = Connection::server(ConnectionConfig::default(), Instant::ZERO);
    let mut buf = Vec::new();
    for step in 0..10u64 {
        let now = Instant::from_micros(step * 1000);
        while let Some(t) = client.poll_transmit(now, &mut buf) {
            server.handle_datagram(now, t.path, &buf[..t.size]);
        }
        while let Some(t) = server.poll_transmit(now, &mut buf) {
            client.handle_datagram(now, t.path, &buf[..t.size]);
        }
    }
    assert!(client.is_established() && server.is_established());
    let defaults = TransportParams::default();
    let mode = ConnectionConfig::default().mode;
    let blocks = defaults.blocks_in_flight.max(mode.min_blocks_in_flight().unwrap_or(0));
    assert!(blocks < 64, "the server must cap the client's 64");
    for c in [&client, &server] {
        let p = c.params();
        assert_eq!((p.max_block_len, p.blocks_in_flight), (defaults.max_block_len, blocks));
    }
}
