#pragma once
// NVLink domains larger than a server (GB200 / GB300 NVL72: 18 servers of 4 GPUs on one NVLink
// switch fabric), shared by every generator. Private to src/topology/.

#include "stepsim/core/result.hpp"
#include "stepsim/topology/generator.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::topology {

/// The `nvlink_domain` parameter every generator declares (default: the server).
ParamSpec nvlink_domain_param();

/// With `nvlink_domain` given as D GPUs over servers of G: checks that G divides D and that the
/// servers fill whole domains, then joins each run of D / G consecutive servers into one node
/// of D GPUs holding all their NICs (ports in server order, so a server's NIC i becomes port
/// k x nics + i of its domain, on the same leaf and plane as before) and sets
/// Topology::servers_per_domain. The links and ports stay as built; switches keep their order.
/// A domain of one server changes nothing.
Result<bool> join_nvlink_domains(const GeneratorParams& params, Topology& topo);

/// What join_nvlink_domains makes of a generator's counts (the same checks): the servers of a
/// domain become one node; ports, links and switches stay.
Result<bool> join_nvlink_domain_counts(const GeneratorParams& params, TopologyCounts& counts);

}  // namespace stepsim::topology
