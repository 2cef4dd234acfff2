#pragma once
// A chunked 1-D table with HDF5's byte-shuffle and deflate filters, compressed by the writer
// itself (private to src/output/): every chunk is shuffled and deflated as those filters would,
// on up to two threads, then stored with H5Dwrite_chunk in chunk order. HDF5 would compress the
// chunks one after the other on one thread, through its own slower shuffle; any HDF5 reader
// decodes these chunks with the standard filters (BENCHMARKS.md, "The step's tables compressed
// by the writer").

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

#include <hdf5.h>

namespace stepsim::output {

/// The deflate level of the shuffled tables.
inline constexpr int kTableDeflateLevel = 1;

/// Byte shuffle of `count` elements of `size` bytes (HDF5's shuffle filter): byte j of element
/// i goes to j * count + i. In blocks of elements that stay in the L1 cache, each written to
/// `size` sequential runs.
inline void shuffle_bytes(const unsigned char* in, unsigned char* out, std::size_t size,
                          std::size_t count) {
  constexpr std::size_t kBlock = 256;
  for (std::size_t lo = 0; lo < count; lo += kBlock) {
    const std::size_t hi = std::min(count, lo + kBlock);
    for (std::size_t j = 0; j < size; ++j) {
      unsigned char* o = out + j * count;
      const unsigned char* e = in + j;
      for (std::size_t i = lo; i < hi; ++i) o[i] = e[i * size];
    }
  }
}

/// Writes `n` rows of `row_bytes` each from `rows` into `ds`, a 1-D dataset of n rows created
/// with chunks of `chunk_rows` rows and the filters shuffle then deflate (kTableDeflateLevel),
/// chunk by chunk (the last chunk padded with zero bytes, as HDF5 pads it with the fill value).
inline bool write_shuffled_chunks(hid_t ds, const void* rows, std::size_t row_bytes, hsize_t n,
                                  hsize_t chunk_rows) {
  const auto chunks = static_cast<std::size_t>((n + chunk_rows - 1) / chunk_rows);
  const std::size_t chunk_bytes = static_cast<std::size_t>(chunk_rows) * row_bytes;
  const auto* src = static_cast<const unsigned char*>(rows);
  std::vector<std::vector<unsigned char>> packed(chunks);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> ok{true};
  const auto work = [&] {
    std::vector<unsigned char> plain;
    std::vector<unsigned char> shuffled(chunk_bytes);
    for (std::size_t k = next++; k < chunks; k = next++) {
      const std::size_t lo = k * chunk_bytes;
      const std::size_t len = std::min(chunk_bytes, static_cast<std::size_t>(n) * row_bytes - lo);
      const unsigned char* in = src + lo;
      if (len < chunk_bytes) {  // the last chunk
        plain.resize(chunk_bytes);
        std::memcpy(plain.data(), in, len);
        std::memset(plain.data() + len, 0, chunk_bytes - len);
        in = plain.data();
      }
      shuffle_bytes(in, shuffled.data(), row_bytes, static_cast<std::size_t>(chunk_rows));
      uLongf size = compressBound(static_cast<uLong>(chunk_bytes));
      packed[k].resize(size);
      if (compress2(packed[k].data(), &size, shuffled.data(), static_cast<uLong>(chunk_bytes),
                    kTableDeflateLevel) != Z_OK) {
        ok = false;
      }
      packed[k].resize(size);
    }
  };
  const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
  const std::size_t helpers = std::min<std::size_t>(std::min(cores, 2U), chunks) - 1;
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (!ok) return false;
  for (std::size_t k = 0; k < chunks; ++k) {
    const hsize_t offset = k * chunk_rows;
    if (H5Dwrite_chunk(ds, H5P_DEFAULT, 0, &offset, packed[k].size(), packed[k].data()) < 0) {
      return false;
    }
  }
  return true;
}

}  // namespace stepsim::output
