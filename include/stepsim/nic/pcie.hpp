#pragma once
/// The NIC's PCIe host interface as pure arithmetic (no events): link bandwidth from generation,
/// lanes, encoding and TLP overhead, plus the fixed latencies of doorbells, descriptor reads,
/// payload DMA reads and completion writes (DOMAIN.md section 2). The RDMA NIC model adds these
/// to its pipeline; this file never schedules anything.
///
/// Deliberate deviation from the issue: the issue names Gen5 x16 as the host interface, but Gen5
/// x16 carries ~461 Gb/s of data after TLP overhead and cannot feed an 800G or 1.6T port. With
/// `auto_size` (the default) size_for_port() picks the smallest of Gen5 x16, Gen6 x16, Gen6 x32
/// and Gen7 x32 that keeps up with the port; set a fixed link ("gen5x16") to model a host-bound
/// NIC on purpose.

#include <cstdint>
#include <string>

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"

namespace stepsim::nic {

/// Parameters of one NIC's PCIe link to its host (and to GPUs behind the same PCIe switch).
struct PcieParams {
  int gen = 5;                           ///< PCIe generation, 3..7
  int lanes = 16;                        ///< link width: 1, 2, 4, 8, 16 or 32
  Bytes max_payload = Bytes(256);        ///< MPS: largest TLP data payload, 128..4096 (power of 2)
  Bytes max_read_request = Bytes(4096);  ///< MRRS: largest read request, 128..4096 (power of 2)
  SimTime doorbell = SimTime::ns(150);   ///< posted MMIO write of a doorbell until the NIC sees it
  SimTime read_latency = SimTime::ns(200);  ///< round trip of a small non-posted read (64 B WQE)
  /// First completion of a payload read from host or GPU memory; the ~300 ns default is a GPU
  /// read peer-to-peer through a PCIe switch (GPUDirect RDMA).
  SimTime dma_read_latency = SimTime::ns(300);
  /// First completion of a payload read from GPU memory when the peer-to-peer path goes through
  /// the root complex (NIC and GPU not under one switch): 0.8-1.2 us in DOMAIN.md, midpoint here.
  SimTime root_complex_read_latency = SimTime::ns(1000);
  SimTime write_latency = SimTime::ns(250);  ///< posted write (e.g. a CQE) until visible to host
  /// Grow the link with the port (size_for_port); false keeps gen and lanes as given.
  bool auto_size = true;

  /// Checks ranges; the error names the parameter and the allowed values.
  [[nodiscard]] Result<bool> validate() const;
};

/// Signalling rate per direction before encoding: lanes x GT/s (Gen3 8, Gen4 16, Gen5 32, Gen6 64,
/// Gen7 128 GT/s per lane).
DataRate signalling_rate(const PcieParams& p);

/// Bit rate per direction after line encoding (Gen3-5 128b/130b; Gen6/7 FLIT mode, 236 of each
/// 256-byte flit carry TLP bytes), rounded down to a whole bit/s.
DataRate raw_bandwidth(const PcieParams& p);

/// Bytes each TLP adds to its payload on the link: 24 for Gen3-5 (16 B header, 8 B framing and
/// LCRC), 16 for Gen6/7 (header only; flit framing and CRC are in raw_bandwidth()).
Bytes tlp_overhead(const PcieParams& p);

/// Data bandwidth per direction after TLP overhead with MPS-sized TLPs: raw x MPS / (MPS +
/// overhead), rounded down. Used for both DMA writes and read completions.
DataRate effective_bandwidth(const PcieParams& p);

/// Time the link is busy moving `size` bytes of data (bandwidth only, no latency): the payload
/// plus one TLP overhead per started MPS chunk at raw_bandwidth(), rounded up to a picosecond.
SimTime transfer_time(const PcieParams& p, Bytes size);

/// Number of read requests (each at most MRRS bytes) a DMA read of `size` bytes needs.
std::int64_t read_request_count(const PcieParams& p, Bytes size);

/// The link after a PCIe AER degrade: same lanes, trained down to `gen` (never up; Gen1/2 are not
/// modelled, so below 3 means 3). A trained-down link is fixed: auto_size becomes false.
PcieParams degrade(PcieParams p, int gen);

/// With base.auto_size, base with the smallest of Gen5 x16, Gen6 x16, Gen6 x32, Gen7 x32 whose
/// effective_bandwidth() is at least `port_rate` (Gen7 x32 if none is); otherwise base unchanged.
PcieParams size_for_port(PcieParams base, DataRate port_rate);

/// "Gen5 x16 (57.6 GB/s effective)"; GB/s is 1e9 bytes per second, per direction.
std::string describe(const PcieParams& p);

/// The parse_pcie() form of a link: "gen5x16".
std::string link_name(const PcieParams& p);

/// Parses "auto" (base with auto_size) or "gen<G>x<L>" such as "gen5x16" (base with that gen and
/// width, auto_size false), case-insensitive. The error names the text and the accepted forms.
Result<PcieParams> parse_pcie(const std::string& text, PcieParams base);

}  // namespace stepsim::nic
