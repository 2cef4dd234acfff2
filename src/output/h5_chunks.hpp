#pragma once
// A chunked 1-D table with HDF5's byte-shuffle and deflate filters, compressed by the writer
// itself (private to src/output/): every chunk is shuffled and deflated as those filters would,
// on up to two threads, then stored with H5Dwrite_chunk in chunk order. HDF5 would compress the
// chunks one after the other on one thread, through its own slower shuffle; any HDF5 reader
// decodes these chunks with the standard filters (BENCHMARKS.md, "The step's tables compressed
// by the writer").

#include <zlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <hdf5.h>

namespace stepsim::output {

/// The deflate level of the shuffled tables.
inline constexpr int kTableDeflateLevel = 1;

namespace h5_chunks_detail {

// Transposes the 8x8 bytes of x[0..7]: byte c of x[r] becomes byte r of x[c] (little-endian
// words), in three rounds of swapping 1-, 2- and 4-byte blocks between rows.
inline void transpose8x8(std::uint64_t (&x)[8]) {
  for (int r = 0; r < 8; r += 2) {
    const std::uint64_t t = ((x[r] >> 8) ^ x[r + 1]) & 0x00FF00FF00FF00FFULL;
    x[r + 1] ^= t;
    x[r] ^= t << 8;
  }
  for (int r : {0, 1, 4, 5}) {
    const std::uint64_t t = ((x[r] >> 16) ^ x[r + 2]) & 0x0000FFFF0000FFFFULL;
    x[r + 2] ^= t;
    x[r] ^= t << 16;
  }
  for (int r = 0; r < 4; ++r) {
    const std::uint64_t t = ((x[r] >> 32) ^ x[r + 4]) & 0x00000000FFFFFFFFULL;
    x[r + 4] ^= t;
    x[r] ^= t << 32;
  }
}

}  // namespace h5_chunks_detail

/// Rows of the shuffle's blocks: they stay in the L1 cache.
inline constexpr std::size_t kShuffleBlock = 256;

/// Byte shuffle of `rows` elements of `size` bytes (at most kShuffleBlock) that are elements
/// `at`... of a chunk of `count` (HDF5's shuffle filter): byte j of element at + i goes to
/// j * count + at + i; 8 elements by 8 bytes at a time through an 8x8 byte transpose.
inline void shuffle_block(const unsigned char* in, std::size_t rows, unsigned char* out,
                          std::size_t size, std::size_t count, std::size_t at) {
  const std::size_t words = size / 8;
  const std::size_t rows8 = rows / 8 * 8;
  out += at;
  for (std::size_t w = 0; w < words; ++w) {
    const std::size_t j = w * 8;
    for (std::size_t i = 0; i < rows8; i += 8) {
      std::uint64_t x[8];
      for (std::size_t r = 0; r < 8; ++r) std::memcpy(&x[r], in + (i + r) * size + j, 8);
      h5_chunks_detail::transpose8x8(x);
      for (std::size_t c = 0; c < 8; ++c) std::memcpy(out + (j + c) * count + i, &x[c], 8);
    }
    for (std::size_t c = j; c < j + 8; ++c) {  // the last rows (fewer than 8)
      for (std::size_t i = rows8; i < rows; ++i) out[c * count + i] = in[i * size + c];
    }
  }
  for (std::size_t c = words * 8; c < size; ++c) {  // the bytes after the last whole word
    unsigned char* o = out + c * count;
    for (std::size_t i = 0; i < rows; ++i) o[i] = in[i * size + c];
  }
}

/// Zero bytes for the elements `rows`... of a shuffled chunk of `count` elements of `size` bytes
/// (a table's last chunk, padded as HDF5 pads it with the fill value).
inline void shuffle_zero_tail(unsigned char* out, std::size_t rows, std::size_t size,
                              std::size_t count) {
  if (rows >= count) return;
  for (std::size_t c = 0; c < size; ++c) std::memset(out + c * count + rows, 0, count - rows);
}

/// Byte shuffle of the first `rows` of `count` elements of `size` bytes (HDF5's shuffle filter
/// on a chunk of `count` elements): byte j of element i goes to j * count + i; the elements from
/// `rows` to `count` are zero bytes (`in` holds only the first `rows`).
inline void shuffle_rows(const unsigned char* in, std::size_t rows, unsigned char* out,
                         std::size_t size, std::size_t count) {
  for (std::size_t lo = 0; lo < rows; lo += kShuffleBlock) {
    shuffle_block(in + lo * size, std::min(kShuffleBlock, rows - lo), out, size, count, lo);
  }
  shuffle_zero_tail(out, rows, size, count);
}

/// Byte shuffle of `count` elements of `size` bytes (HDF5's shuffle filter): byte j of element
/// i goes to j * count + i.
inline void shuffle_bytes(const unsigned char* in, unsigned char* out, std::size_t size,
                          std::size_t count) {
  shuffle_rows(in, count, out, size, count);
}

/// The buffers of the (up to two) compressing threads, kept from one table to the next: fresh
/// memory costs a page fault per 4 KiB, which was a fifth of an analytical run's time.
class ChunkScratch {
 public:
  static constexpr std::size_t kWorkers = 2;
  /// Worker `w`'s buffer `which` (0 shuffled chunk, 1 compressed chunk, 2 block of rows) of at
  /// least `bytes` (its contents undefined).
  unsigned char* buffer(std::size_t w, std::size_t which, std::size_t bytes) {
    Buffer& b = buf_[w][which];
    if (b.bytes < bytes) {
      b.data.reset(new unsigned char[bytes]);  // not zeroed: written before it is read
      b.bytes = bytes;
    }
    return b.data.get();
  }

 private:
  struct Buffer {
    std::unique_ptr<unsigned char[]> data;
    std::size_t bytes = 0;
  };
  std::array<std::array<Buffer, 3>, kWorkers> buf_{};
};

/// Where a table's rows come from: `data`, the packed rows in memory, or without it `fill(first,
/// count, out)`, which writes the packed rows first... (count of them, at most kShuffleBlock) to
/// `out`; the compressing threads call it at once, on different rows.
struct TableRows {
  const void* data = nullptr;
  std::function<void(std::size_t first, std::size_t count, unsigned char* out)> fill;
};

/// Writes `n` rows of `row_bytes` each from `rows` into `ds`, a 1-D dataset of n rows created
/// with chunks of `chunk_rows` rows and the filters shuffle then deflate (kTableDeflateLevel),
/// chunk by chunk (the last chunk padded with zero bytes, as HDF5 pads it with the fill value).
inline bool write_shuffled_chunks(hid_t ds, const TableRows& rows, std::size_t row_bytes, hsize_t n,
                                  hsize_t chunk_rows, ChunkScratch& scratch) {
  const auto chunks = static_cast<std::size_t>((n + chunk_rows - 1) / chunk_rows);
  const auto count = static_cast<std::size_t>(chunk_rows);
  const std::size_t chunk_bytes = count * row_bytes;
  const uLong bound = compressBound(static_cast<uLong>(chunk_bytes));
  const auto* src = static_cast<const unsigned char*>(rows.data);
  std::vector<std::vector<unsigned char>> packed(chunks);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> ok{true};
  const auto work = [&](std::size_t w) {
    unsigned char* shuffled = scratch.buffer(w, 0, chunk_bytes);
    unsigned char* out = scratch.buffer(w, 1, bound);
    unsigned char* block =
        src == nullptr ? scratch.buffer(w, 2, kShuffleBlock * row_bytes) : nullptr;
    for (std::size_t k = next++; k < chunks; k = next++) {
      const std::size_t lo = k * count;
      const std::size_t m = std::min(count, static_cast<std::size_t>(n) - lo);
      if (src != nullptr) {
        shuffle_rows(src + lo * row_bytes, m, shuffled, row_bytes, count);
      } else {  // made block by block, each shuffled while it is in the L1 cache
        for (std::size_t b = 0; b < m; b += kShuffleBlock) {
          const std::size_t bm = std::min(kShuffleBlock, m - b);
          rows.fill(lo + b, bm, block);
          shuffle_block(block, bm, shuffled, row_bytes, count, b);
        }
        shuffle_zero_tail(shuffled, m, row_bytes, count);
      }
      uLongf size = bound;
      if (compress2(out, &size, shuffled, static_cast<uLong>(chunk_bytes), kTableDeflateLevel) !=
          Z_OK) {
        ok = false;
        continue;
      }
      packed[k].assign(out, out + size);
    }
  };
  const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
  const std::size_t workers = std::min<std::size_t>(
      std::min<std::size_t>(cores, ChunkScratch::kWorkers), std::max<std::size_t>(chunks, 1));
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < workers; ++t) threads.emplace_back(work, t);
  work(0);
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

/// The same with buffers of its own.
inline bool write_shuffled_chunks(hid_t ds, const void* rows, std::size_t row_bytes, hsize_t n,
                                  hsize_t chunk_rows) {
  ChunkScratch scratch;
  return write_shuffled_chunks(ds, TableRows{rows, {}}, row_bytes, n, chunk_rows, scratch);
}

}  // namespace stepsim::output
