"""Names of nodes and ports (/nodes, /ports, schema version 2): 'leaf0/p3'."""

from .schema import NO_PEER, UserError


class Fabric:
    """Names of nodes and ports from /nodes and /ports (schema version 2): 'leaf0/p3'."""

    def __init__(self, path, nodes, ports):
        import numpy as np
        self.path = path
        self.port_count = int(ports["port"].max()) + 1 if len(ports) else 0
        node_count = int(nodes["node"].max()) + 1 if len(nodes) else 0
        self.node_name = [f"node{i}" for i in range(node_count)]
        self.node_tier = np.zeros(node_count, dtype=np.int64)
        for n, name, tier in zip(nodes["node"], nodes["name"], nodes["tier"]):
            text = bytes(name).rstrip(b"\0").decode("utf-8", "replace") \
                if isinstance(name, (bytes, np.bytes_)) else str(name)
            self.node_name[int(n)] = text or f"node{int(n)}"
            self.node_tier[int(n)] = int(tier)
        self.known = np.zeros(self.port_count, dtype=bool)
        self.node = np.zeros(self.port_count, dtype=np.int64)
        self.index = np.zeros(self.port_count, dtype=np.int64)
        self.peer = np.full(self.port_count, NO_PEER, dtype=np.int64)
        self.rate_gbps = np.zeros(self.port_count)
        p = ports["port"].astype(np.int64)
        self.known[p] = True
        self.node[p] = ports["node"]
        self.index[p] = ports["index"]
        self.peer[p] = ports["peer"]
        self.rate_gbps[p] = ports["rate_gbps"]
        bad = self.node[p] >= node_count
        if bad.any():
            raise UserError(f"{path}: /ports row of port {int(p[bad][0])} names node "
                            f"{int(self.node[p][bad][0])}, which /nodes lacks")
        self.tier = self.node_tier[self.node]

    def check_ports(self, ports, where):
        import numpy as np
        bad = (ports >= self.port_count) | ~self.known[np.minimum(ports, self.port_count - 1)] \
            if self.port_count else np.ones(len(ports), dtype=bool)
        if bad.any():
            raise UserError(f"{self.path}: {where} names port {int(ports[bad][0])}, which "
                            f"/ports lacks")

    def label(self, port):
        port = int(port)
        if 0 <= port < self.port_count and self.known[port]:
            return f"{self.node_name[self.node[port]]}/p{int(self.index[port])}"
        return f"port {port}"

    def peer_label(self, port):
        peer = int(self.peer[int(port)])
        return self.label(peer) if peer != NO_PEER else "(no peer)"


def fabric_of(path, tables, what):
    """The file's Fabric; `what` (a plot or report line) needs /nodes and /ports."""
    for name in ("nodes", "ports"):
        if tables.get(name) is None:
            raise UserError(f"{path}: no /{name} table: {what} needs the node and port names "
                            f"(schema version 2, docs/hdf5-schema.md)")
    if "_fabric" not in tables:
        tables["_fabric"] = Fabric(path, tables["nodes"], tables["ports"])
    return tables["_fabric"]
