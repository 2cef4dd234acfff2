#include "stepsim/output/samples_h5.hpp"

#include "src/output/h5_block.hpp"
#include "src/output/h5_mpi.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace stepsim::output {

namespace {

// Closes an HDF5 handle on scope exit.
struct H5Handle {
  hid_t id = -1;
  herr_t (*close)(hid_t) = nullptr;
  H5Handle(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& o) noexcept : id(o.id), close(o.close) { o.id = -1; }
  H5Handle& operator=(H5Handle&&) = delete;
  ~H5Handle() {
    if (id >= 0 && close != nullptr) close(id);
  }
  operator hid_t() const { return id; }  // NOLINT: a handle is used where HDF5 wants an id
};

bool attr_text(hid_t obj, const char* name, const std::string& value) {
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, std::max<std::size_t>(1, value.size()));
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attr(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (attr < 0) return false;
  const std::string v = value.empty() ? std::string(1, '\0') : value;
  return H5Awrite(attr, type, v.data()) >= 0;
}

// Rows as they are in the file: packed, so that the file's type is the memory's (no conversion,
// which parallel writes through filters need).
#pragma pack(push, 1)
struct NodeRow {
  std::uint32_t node;
  char name[kNodeNameBytes];
  std::uint32_t tier;
};
struct PortRow {
  std::uint32_t port;
  std::uint32_t node;
  std::uint32_t index;
  std::uint32_t peer;
  double rate_gbps;
};
struct SampleDiskRow {
  std::uint32_t bin;
  std::uint32_t port;
  std::uint64_t bytes;
  std::uint64_t queue_max_bytes;
  std::int64_t paused_ps;
  std::uint32_t ecn_marks;
  std::uint32_t pause_sent;
  std::uint32_t drops;
};
#pragma pack(pop)
static_assert(sizeof(NodeRow) == 40 && sizeof(PortRow) == 24 && sizeof(SampleDiskRow) == 44);

struct Field {
  const char* name;
  std::size_t offset;
  hid_t type;
};
#define STEPSIM_H5_FIELD(Row, member, type) \
  Field {                                   \
#member, offsetof(Row, member), type    \
  }

H5Handle compound(std::size_t size, const std::vector<Field>& fields) {
  H5Handle t(H5Tcreate(H5T_COMPOUND, size), H5Tclose);
  for (const Field& f : fields) H5Tinsert(t, f.name, f.offset, f.type);
  return t;
}

// A fixed table of all `rows`.
template <class Row>
bool write_fixed(hid_t file, const char* name, const std::vector<Row>& rows, hid_t type,
                 const std::string& doc) {
  const auto n = static_cast<hsize_t>(rows.size());
  H5Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  H5Handle dcpl(dataset_create_plist(), H5Pclose);
  if (n > 0) {
    const hsize_t chunk = std::min<hsize_t>(n, 65536);
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_deflate(dcpl, 4);
  }
  H5Handle ds(H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  if (ds < 0 || !attr_text(ds, "doc", doc)) return false;
  if (n == 0) return true;
  return write_block(ds, type, rows.data());
}

H5Handle sample_type() {
  const hid_t u32 = H5T_NATIVE_UINT32, u64 = H5T_NATIVE_UINT64, i64 = H5T_NATIVE_INT64;
  using R = SampleDiskRow;
  return compound(sizeof(R),
                  {STEPSIM_H5_FIELD(R, bin, u32), STEPSIM_H5_FIELD(R, port, u32),
                   STEPSIM_H5_FIELD(R, bytes, u64), STEPSIM_H5_FIELD(R, queue_max_bytes, u64),
                   STEPSIM_H5_FIELD(R, paused_ps, i64), STEPSIM_H5_FIELD(R, ecn_marks, u32),
                   STEPSIM_H5_FIELD(R, pause_sent, u32), STEPSIM_H5_FIELD(R, drops, u32)});
}

constexpr hsize_t kSampleChunkRows = 4096;
constexpr std::uint64_t kBatchBytes = 8u << 20;
constexpr double kFlushEverySeconds = 10;

// /samples (attribute interval_ps) and its empty, extendable /samples/ports, on the writing rank:
// the dataset, or -1.
hid_t create_samples(hid_t file, SimTime interval) {
  errno = 0;
  H5Handle group(H5Gcreate2(file, "/samples", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (group < 0) return -1;
  {
    const std::int64_t ps = interval.picoseconds();
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle attr(
        H5Acreate2(group, "interval_ps", H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT),
        H5Aclose);
    if (attr < 0 || H5Awrite(attr, H5T_NATIVE_INT64, &ps) < 0) return -1;
  }
  H5Handle type = sample_type();
  const hsize_t zero = 0;
  const hsize_t unlimited = H5S_UNLIMITED;
  H5Handle space(H5Screate_simple(1, &zero, &unlimited), H5Sclose);
  H5Handle dcpl(dataset_create_plist(), H5Pclose);
  H5Pset_chunk(dcpl, 1, &kSampleChunkRows);
  H5Pset_shuffle(dcpl);
  H5Pset_deflate(dcpl, 1);
  const hid_t ds = H5Dcreate2(group, "ports", type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (ds < 0) return -1;
  if (!attr_text(ds, "doc",
                 "per (bin, port) for ports that did anything in the bin, ordered by bin then "
                 "port; the bin starts at bin x /samples@interval_ps: frame bytes sent, largest "
                 "egress backlog, time paused by PFC (summed over classes), ECN marks at this "
                 "egress, XOFF frames sent by this port's ingress, packets lost")) {
    H5Dclose(ds);
    return -1;
  }
  return ds;
}

}  // namespace

std::vector<std::string> node_names(const topology::Topology& topo) {
  std::vector<std::string> names;
  names.reserve(topo.nodes.size());
  std::vector<std::uint32_t> next(256, 0);  // by tier
  for (const topology::Node& n : topo.nodes) {
    std::string s = topo.tier_name(n.tier);
    std::replace(s.begin(), s.end(), ' ', '-');  // "tier 4" -> "tier-4"
    s += "-" + std::to_string(next[n.tier]++);
    if (s.size() >= kNodeNameBytes) s.resize(kNodeNameBytes - 1);
    names.push_back(std::move(s));
  }
  return names;
}

Result<bool> write_name_tables(hid_t file, const topology::Topology& topo) {
  const hid_t u32 = H5T_NATIVE_UINT32, f64 = H5T_NATIVE_DOUBLE;
  const std::vector<std::string> names = node_names(topo);
  std::vector<NodeRow> nodes(topo.nodes.size());
  for (std::size_t v = 0; v < topo.nodes.size(); ++v) {
    NodeRow& r = nodes[v];
    std::memset(&r, 0, sizeof(r));
    r.node = static_cast<std::uint32_t>(v);
    std::memcpy(r.name, names[v].data(), names[v].size());
    r.tier = topo.nodes[v].tier;
  }
  std::vector<PortRow> ports(topo.ports.size());
  for (std::size_t p = 0; p < topo.ports.size(); ++p) {
    const topology::Port& tp = topo.ports[p];
    ports[p] = PortRow{static_cast<std::uint32_t>(p), tp.node, tp.index, tp.peer,
                       tp.link == topology::kNone
                           ? 0.0
                           : static_cast<double>(topo.link_rate(tp.link).bits_per_second()) * 1e-9};
  }
  H5Handle name_type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(name_type, kNodeNameBytes);
  H5Tset_strpad(name_type, H5T_STR_NULLPAD);
  H5Handle node_type = compound(sizeof(NodeRow), {STEPSIM_H5_FIELD(NodeRow, node, u32),
                                                  STEPSIM_H5_FIELD(NodeRow, name, name_type),
                                                  STEPSIM_H5_FIELD(NodeRow, tier, u32)});
  H5Handle port_type = compound(
      sizeof(PortRow), {STEPSIM_H5_FIELD(PortRow, port, u32), STEPSIM_H5_FIELD(PortRow, node, u32),
                        STEPSIM_H5_FIELD(PortRow, index, u32), STEPSIM_H5_FIELD(PortRow, peer, u32),
                        STEPSIM_H5_FIELD(PortRow, rate_gbps, f64)});
  bool ok = write_fixed(file, "/nodes", nodes, node_type,
                        "one row per topology node: id, name (<tier>-<ordinal in its tier>), tier "
                        "(0 server, 1 leaf, 2 spine, 3 core)");
  ok = ok && write_fixed(file, "/ports", ports, port_type,
                         "one row per port: id, node, index on its node, the port at the other end "
                         "of its link (4294967295 if uncabled), link rate in Gb/s (0 if uncabled)");
  if (!ok) return Error{"writing /nodes and /ports failed"};
  return true;
}

SamplesH5::SamplesH5(hid_t file, hid_t dataset, std::uint64_t batch_bins, MPI_Comm comm)
    : file_(file),
      dataset_(dataset),
      batch_bins_(batch_bins),
      comm_(comm),
      rank_(comm_rank(comm)),
      ranks_(comm_size(comm)),
      next_append_bin_(batch_bins),
      last_flush_(std::chrono::steady_clock::now()) {}

SamplesH5::~SamplesH5() {
  if (dataset_ >= 0) H5Dclose(dataset_);
}

Result<std::unique_ptr<SamplesH5>> SamplesH5::create(hid_t file, const topology::Topology& topo,
                                                     SimTime interval, MPI_Comm comm) {
  const std::uint64_t per_bin =
      std::max<std::uint64_t>(1, topo.ports.size()) * sizeof(SampleDiskRow);
  const std::uint64_t batch = std::clamp<std::uint64_t>(kBatchBytes / per_bin, 1, 256);
  hid_t ds = -1;
  Result<bool> made = true;
  if (comm_rank(comm) == 0) {
    ds = create_samples(file, interval);
    if (ds < 0) made = Error{"creating /samples failed" + io_reason()};
  }
  if (auto ok = agree_with_writer(made, comm); !ok) return ok.error();
  return std::unique_ptr<SamplesH5>(new SamplesH5(file, ds, batch, comm));
}

Result<bool> SamplesH5::append(std::vector<fabric::SampleRow>& rows) {
  // Every rank's count, then every row on rank 0, which merges them in (bin, port) order and
  // writes them alone; its outcome is broadcast. Rank 0's clock decides when the file is flushed.
  const long long mine = static_cast<long long>(rows.size());
  std::vector<long long> counts(static_cast<std::size_t>(ranks_), mine);
  if (ranks_ > 1) MPI_Allgather(&mine, 1, MPI_LONG_LONG, counts.data(), 1, MPI_LONG_LONG, comm_);
  long long total = 0;
  for (const long long c : counts) total += c;
  if (total == 0) {
    rows.clear();
    return true;
  }
  constexpr long long kRow = sizeof(fabric::SampleRow);
  if (total * kRow > std::numeric_limits<int>::max()) {
    return Error{"a batch of samples exceeds 2 GiB"};  // batch_bins keeps it near 8 MiB
  }
  std::vector<fabric::SampleRow> all;
  if (ranks_ > 1) {
    std::vector<int> bytes(static_cast<std::size_t>(ranks_));
    std::vector<int> displ(static_cast<std::size_t>(ranks_));
    if (rank_ == 0) {
      all.resize(static_cast<std::size_t>(total));
      int at = 0;
      for (std::size_t r = 0; r < bytes.size(); ++r) {
        bytes[r] = static_cast<int>(counts[r] * kRow);
        displ[r] = at;
        at += bytes[r];
      }
    }
    MPI_Gatherv(rows.data(), static_cast<int>(mine * kRow), MPI_BYTE, all.data(), bytes.data(),
                displ.data(), MPI_BYTE, 0, comm_);
    rows.clear();
  } else {
    all.swap(rows);
    rows.clear();
  }
  const auto n = static_cast<hsize_t>(total);
  Result<bool> wrote = true;
  if (rank_ == 0) {
    std::sort(all.begin(), all.end());
    std::vector<SampleDiskRow> disk;
    disk.reserve(all.size());
    for (const fabric::SampleRow& r : all) {
      disk.push_back(SampleDiskRow{r.bin, r.port, r.bytes, r.queue_max_bytes, r.paused_ps,
                                   r.ecn_marks, r.pause_sent, r.drops});
    }
    const hsize_t size = written_ + n;
    errno = 0;
    bool ok = dataset_ >= 0 && H5Dset_extent(dataset_, &size) >= 0;
    if (ok) {
      H5Handle type = sample_type();
      H5Handle fspace(H5Dget_space(dataset_), H5Sclose);
      H5Handle mspace(H5Screate_simple(1, &n, nullptr), H5Sclose);
      const hsize_t lo = written_;
      H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &lo, nullptr, &n, nullptr);
      ok = H5Dwrite(dataset_, type, mspace, fspace, H5P_DEFAULT, disk.data()) >= 0;
      const auto now = std::chrono::steady_clock::now();
      if (ok && std::chrono::duration<double>(now - last_flush_).count() >= kFlushEverySeconds) {
        ok = H5Fflush(file_, H5F_SCOPE_GLOBAL) >= 0;
        last_flush_ = now;
      }
    }
    if (!ok) wrote = Error{"appending to /samples/ports failed" + io_reason()};
  }
  if (auto ok = agree_with_writer(wrote, comm_); !ok) return ok.error();
  written_ += n;
  ++appends_;
  return true;
}

void SamplesH5::at_window(fabric::FabricSamples& samples, SimTime now, bool last) {
  samples.drain(now, last);
  if (error_) {
    samples.rows().clear();
    return;
  }
  if (!last && samples.bins_drained() < next_append_bin_) return;
  if (auto ok = append(samples.rows()); !ok) error_ = ok.error();
  next_append_bin_ = samples.bins_drained() + batch_bins_;
}

Result<std::unique_ptr<SamplesFile>> SamplesFile::create(const std::string& path,
                                                         const std::string& option,
                                                         const topology::Topology& topo,
                                                         SimTime interval, MPI_Comm comm) {
  // Rank 0 creates the file and writes the name tables; the others hold no file.
  hid_t file = -1;
  Result<bool> made = true;
  if (comm_rank(comm) == 0) {
    if (std::getenv("STEPSIM_H5_ERRORS") == nullptr) H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    H5Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    set_file_driver(fapl);
    errno = 0;
    file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (file < 0) {
      made = Error{option + ": cannot create HDF5 file '" + path + "'" + io_reason()};
    } else if (auto ok = write_name_tables(file, topo); !ok) {
      made = Error{option + ": writing '" + path + "' failed: " + ok.error().message};
    }
  }
  std::unique_ptr<SamplesFile> f(new SamplesFile(path, option, file, comm));
  if (auto ok = agree_with_writer(made, comm); !ok) {
    return ok.error();
  }
  if (interval > SimTime::zero()) {
    auto s = SamplesH5::create(file, topo, interval, comm);
    if (!s) {
      return Error{option + ": writing '" + path + "' failed: " + s.error().message};
    }
    f->samples_ = std::move(s).value();
  }
  return f;
}

Result<bool> SamplesFile::close() {
  if (!open_) return true;
  open_ = false;
  samples_.reset();
  Result<bool> closed = true;
  if (file_ >= 0) {
    errno = 0;
    if (H5Fclose(file_) < 0)
      closed = Error{option_ + ": closing '" + path_ + "' failed" + io_reason()};
    file_ = -1;
  }
  return agree_with_writer(closed, comm_);
}

SamplesFile::~SamplesFile() {
  (void)close();
}

}  // namespace stepsim::output
