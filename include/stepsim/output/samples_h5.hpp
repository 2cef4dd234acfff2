#pragma once
/// HDF5 tables of the fabric (schema in docs/hdf5-schema.md): /nodes and /ports, the topology's
/// name table, and /samples, the ports' time series (fabric_samples.hpp) appended while the run
/// goes: every rank drains its own ports' rows at window boundaries; every `batch_bins` bins (and
/// at the end of the run, also after a stop request) the rows of all ranks are gathered to rank
/// 0, merged in (bin, port) order and appended to the extendable /samples/ports by rank 0 alone
/// (HDF5's POSIX driver; the other ranks make no HDF5 call and learn rank 0's outcome by a
/// broadcast); the file is flushed at an append when 10 s of wall time passed since the last
/// flush, and closed at the end. The contents do not depend on the number of ranks or threads.
///
/// Attaching it to a run (what bench fabric does, src/cli/bench_fabric.cpp):
///   auto file = SamplesFile::create(path, "--samples", topo, interval, MPI_COMM_WORLD);
///   fabric::FabricSamples sampler(interval);
///   opts.at_window = [h5 = (*file)->samples(), &sampler](SimTime t, bool last) {
///     h5->at_window(sampler, t, last);
///   };
///   nic::run_rdma(topo, conns, nic, fabric, app, sync, opts, agent, &sampler);
///   // then (*file)->samples()->error(), (*file)->close()
/// A writer with its own file calls write_name_tables and SamplesH5::create on it instead.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <hdf5.h>
#include <mpi.h>

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/fabric/fabric_samples.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::output {

/// Bytes of the fixed-length name field of /nodes (NUL-padded; names are cut to one less).
inline constexpr std::size_t kNodeNameBytes = 32;

/// Every node's name in /nodes: "<tier name>-<ordinal among the nodes of its tier>", e.g.
/// "server-12", "leaf-3", "spine-0", "core-1" (the tier names are the topology's).
std::vector<std::string> node_names(const topology::Topology& topo);

/// Writes /nodes and /ports into `file` (on the writing rank only).
Result<bool> write_name_tables(hid_t file, const topology::Topology& topo);

/// /samples of one open file.
class SamplesH5 {
 public:
  /// Creates /samples (attribute interval_ps) and the empty, chunked, extendable
  /// /samples/ports in `file` (rank 0's open file; ignored on the other ranks); collective over
  /// `comm`. `file` must stay open while this is used.
  static Result<std::unique_ptr<SamplesH5>> create(hid_t file, const topology::Topology& topo,
                                                   SimTime interval, MPI_Comm comm);
  ~SamplesH5();
  SamplesH5(const SamplesH5&) = delete;
  SamplesH5& operator=(const SamplesH5&) = delete;

  /// The engine's window hook (EngineOptions::at_window): drains `samples` and appends what it
  /// holds every batch_bins() bins and when `last`. A failed write is kept in error() and the
  /// rows that follow are dropped (every rank agrees).
  void at_window(fabric::FabricSamples& samples, SimTime now, bool last);
  /// Appends this rank's `rows` (ordered by (bin, port)) together with every other rank's, in
  /// (bin, port) order; collective. Empties `rows`.
  Result<bool> append(std::vector<fabric::SampleRow>& rows);

  [[nodiscard]] std::uint64_t rows_written() const { return written_; }
  [[nodiscard]] std::uint64_t appends() const { return appends_; }
  /// Bins between appends: as many as keep a batch of every port's rows within 8 MiB, 1..256.
  [[nodiscard]] std::uint64_t batch_bins() const { return batch_bins_; }
  [[nodiscard]] const std::optional<Error>& error() const { return error_; }

 private:
  SamplesH5(hid_t file, hid_t dataset, std::uint64_t batch_bins, MPI_Comm comm);

  hid_t file_;
  hid_t dataset_;
  std::uint64_t batch_bins_;
  MPI_Comm comm_;
  int rank_ = 0;
  int ranks_ = 1;
  std::uint64_t written_ = 0;
  std::uint64_t appends_ = 0;
  std::uint64_t next_append_bin_;
  std::chrono::steady_clock::time_point last_flush_;
  std::optional<Error> error_;
};

/// A new file (truncated) with /nodes, /ports and, when `interval` > 0, /samples: bench fabric's
/// --samples. Collective over `comm`; the error names the file (`option` says which option gave
/// it).
class SamplesFile {
 public:
  static Result<std::unique_ptr<SamplesFile>> create(const std::string& path,
                                                     const std::string& option,
                                                     const topology::Topology& topo,
                                                     SimTime interval, MPI_Comm comm);
  ~SamplesFile();
  SamplesFile(const SamplesFile&) = delete;
  SamplesFile& operator=(const SamplesFile&) = delete;
  /// Null when the interval was 0.
  [[nodiscard]] SamplesH5* samples() { return samples_.get(); }
  /// The open file on rank 0 (for more tables in the same file); -1 on the other ranks and
  /// after close().
  [[nodiscard]] hid_t file() const { return file_; }
  /// Closes the file (collective: rank 0 closes it, every rank returns its outcome); the error
  /// names it. Also done by the destructor.
  Result<bool> close();

 private:
  SamplesFile(std::string path, std::string option, hid_t file, MPI_Comm comm)
      : path_(std::move(path)), option_(std::move(option)), file_(file), comm_(comm) {}
  std::string path_;
  std::string option_;
  hid_t file_;
  MPI_Comm comm_;
  bool open_ = true;  // on every rank until close()
  std::unique_ptr<SamplesH5> samples_;
};

}  // namespace stepsim::output
