// The step's tables compressed by the writer (src/output/h5_chunks.hpp): HDF5's own shuffle and
// deflate filters read back every row, for a table of several chunks with a partial last one,
// and the stored chunks are those HDF5 itself writes through the same filters.
#include "src/output/h5_chunks.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace stepsim::output {
namespace {

#pragma pack(push, 1)
struct Row {
  std::uint32_t a;
  std::uint16_t b;
  double t;
};
#pragma pack(pop)

hid_t row_type() {
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(Row));
  H5Tinsert(t, "a", offsetof(Row, a), H5T_NATIVE_UINT32);
  H5Tinsert(t, "b", offsetof(Row, b), H5T_NATIVE_UINT16);
  H5Tinsert(t, "t", offsetof(Row, t), H5T_NATIVE_DOUBLE);
  return t;
}

// Dataset `name` of `file` for `n` rows in chunks of `chunk` rows, shuffle and deflate; closed
// with its type, space and property list when it goes out of scope.
struct H5ChunksDataset {
  hid_t type = row_type();
  hid_t space = -1;
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hid_t ds = -1;
  H5ChunksDataset(hid_t file, const char* name, hsize_t n, hsize_t chunk) {
    space = H5Screate_simple(1, &n, nullptr);
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, kTableDeflateLevel);
    ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  }
  H5ChunksDataset(const H5ChunksDataset&) = delete;
  H5ChunksDataset& operator=(const H5ChunksDataset&) = delete;
  ~H5ChunksDataset() {
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Tclose(type);
  }
};

// Writes `rows` as dataset `name` of `file` with chunks of `chunk` rows, shuffle and deflate;
// `direct`: through write_shuffled_chunks, else through HDF5's filters.
bool write(hid_t file, const char* name, const std::vector<Row>& rows, hsize_t chunk, bool direct) {
  const auto n = static_cast<hsize_t>(rows.size());
  const H5ChunksDataset d(file, name, n, chunk);
  return d.ds >= 0 &&
         (direct ? write_shuffled_chunks(d.ds, rows.data(), sizeof(Row), n, chunk)
                 : H5Dwrite(d.ds, d.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) >= 0);
}

// The same through write_shuffled_chunks with rows made on demand (TableRows::fill), copied from
// `rows` block by block.
bool write_made(hid_t file, const char* name, const std::vector<Row>& rows, hsize_t chunk) {
  const auto n = static_cast<hsize_t>(rows.size());
  const H5ChunksDataset d(file, name, n, chunk);
  TableRows made;
  std::atomic<std::size_t> calls{0};
  made.fill = [&rows, &calls](std::size_t first, std::size_t count, unsigned char* out) {
    EXPECT_LE(count, kShuffleBlock);
    std::memcpy(out, rows.data() + first, count * sizeof(Row));
    ++calls;
  };
  ChunkScratch scratch;
  const bool ok = d.ds >= 0 && write_shuffled_chunks(d.ds, made, sizeof(Row), n, chunk, scratch);
  EXPECT_GE(calls.load(), rows.size() / kShuffleBlock);
  return ok;
}

std::vector<unsigned char> stored_chunk(hid_t file, const char* name, hsize_t offset) {
  const hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  hsize_t bytes = 0;
  H5Dget_chunk_storage_size(ds, &offset, &bytes);
  std::vector<unsigned char> buf(bytes);
  std::uint32_t mask = 0;
  H5Dread_chunk(ds, H5P_DEFAULT, &offset, &mask, buf.data());
  H5Dclose(ds);
  return buf;
}

TEST(H5Chunks, ShuffleMovesByteJOfElementIToJTimesCountPlusI) {
  const unsigned char in[6] = {1, 2, 3, 4, 5, 6};  // 3 elements of 2 bytes
  unsigned char out[6] = {};
  shuffle_bytes(in, out, 2, 3);
  const unsigned char want[6] = {1, 3, 5, 2, 4, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], want[i]) << i;
}

// The shuffle through 8x8 byte transposes against the byte-by-byte definition, for element
// sizes with and without a partial last word, blocks with a partial last group of 8, and a
// partial chunk (its missing elements zero bytes).
TEST(H5Chunks, ShuffleOfPartialChunksMatchesTheByteDefinition) {
  for (const std::size_t size : {1U, 3U, 8U, 14U, 16U, 44U, 52U, 63U}) {
    for (const std::size_t count : {1U, 7U, 8U, 300U, 517U}) {
      for (const std::size_t rows : {count, count / 2, std::size_t{1}}) {
        std::vector<unsigned char> in(rows * size);
        for (std::size_t k = 0; k < in.size(); ++k) {
          in[k] = static_cast<unsigned char>((k * 131 + 7) ^ (k >> 8));
        }
        std::vector<unsigned char> out(count * size, 0xAB), want(count * size, 0);
        for (std::size_t i = 0; i < rows; ++i) {
          for (std::size_t j = 0; j < size; ++j) want[j * count + i] = in[i * size + j];
        }
        shuffle_rows(in.data(), rows, out.data(), size, count);
        ASSERT_EQ(out, want) << "size " << size << " count " << count << " rows " << rows;
      }
    }
  }
}

TEST(H5Chunks, HdfFiltersReadBackEveryRowAndStoreTheSameChunks) {
  std::vector<Row> rows(10'000);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i] = Row{static_cast<std::uint32_t>(i * 7919 % 1000), static_cast<std::uint16_t>(i % 5),
                  1e-6 * static_cast<double>(i)};
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / "stepsim_h5_chunks_test.h5").string();
  const hsize_t chunk = 3'000;  // 4 chunks, the last of 1,000 rows
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_TRUE(write(file, "direct", rows, chunk, true));
  ASSERT_TRUE(write(file, "filtered", rows, chunk, false));
  ASSERT_TRUE(write_made(file, "made", rows, chunk));
  H5Fclose(file);
  file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t ds = H5Dopen2(file, "direct", H5P_DEFAULT);
  const hid_t type = row_type();
  std::vector<Row> back(rows.size());
  ASSERT_GE(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data()), 0);
  H5Tclose(type);
  H5Dclose(ds);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // Copies: the rows are packed, so a reference to a field may be misaligned.
    const std::uint32_t a = back[i].a, want_a = rows[i].a;
    const std::uint16_t b = back[i].b, want_b = rows[i].b;
    const double t = back[i].t, want_t = rows[i].t;
    ASSERT_EQ(a, want_a) << i;
    ASSERT_EQ(b, want_b) << i;
    ASSERT_EQ(t, want_t) << i;
  }
  for (hsize_t at = 0; at < rows.size(); at += chunk) {
    const auto mine = stored_chunk(file, "direct", at);
    EXPECT_FALSE(mine.empty());
    // The last chunk's padding may differ from HDF5's; the full chunks are the same bytes.
    if (at + chunk <= rows.size()) {
      EXPECT_EQ(mine, stored_chunk(file, "filtered", at)) << at;
    }
    // Rows made block by block by a fill function: the same chunks, the last one included.
    EXPECT_EQ(mine, stored_chunk(file, "made", at)) << at;
  }
  H5Fclose(file);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace stepsim::output
