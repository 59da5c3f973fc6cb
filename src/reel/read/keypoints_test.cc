// reel/keypoints.h: ReadKeypointsFile's schema rules on files written here with Arrow.
#include "reel/keypoints.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "io/parquet_io.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

std::shared_ptr<arrow::Array> FixedFloats(int64_t rows, int32_t width) {
  arrow::FloatBuilder values;
  for (int64_t i = 0; i < rows * width; ++i) EXPECT_TRUE(values.Append(static_cast<float>(i)).ok());
  return arrow::FixedSizeListArray::FromArrays(values.Finish().ValueOrDie(), width).ValueOrDie();
}

std::shared_ptr<arrow::Array> Int32s(const std::vector<int32_t>& v) {
  arrow::Int32Builder b;
  EXPECT_OK(b.AppendValues(v));
  return b.Finish().ValueOrDie();
}

std::shared_ptr<arrow::Array> FixedInts(int64_t rows) {
  std::vector<int32_t> v(static_cast<size_t>(rows * 2), 0);
  return arrow::FixedSizeListArray::FromArrays(Int32s(v), 2).ValueOrDie();
}

// A hand_pose file: frame_index, num_hands, hand_data [width], track_ids [2].
std::string WriteHandPose(const std::string& name, const std::vector<int32_t>& frames, int32_t width,
                          std::shared_ptr<arrow::Array> num_hands = nullptr) {
  const int64_t n = static_cast<int64_t>(frames.size());
  if (!num_hands) num_hands = Int32s(std::vector<int32_t>(frames.size(), 1));
  auto schema = arrow::schema({arrow::field("frame_index", arrow::int32()), arrow::field("num_hands", num_hands->type()),
                               arrow::field("hand_data", arrow::fixed_size_list(arrow::float32(), width)),
                               arrow::field("track_ids", arrow::fixed_size_list(arrow::int32(), 2))});
  auto table = arrow::Table::Make(schema, {Int32s(frames), num_hands, FixedFloats(n, width), FixedInts(n)});
  const std::string path = ::testing::TempDir() + "/reel_keypoints_test_" + name + ".parquet";
  EXPECT_OK(internal::WriteParquet(DefaultFileSystem(), path, *table));
  return path;
}

TEST(ReadKeypointsFile, AcceptsTheReferenceSchema) {
  const std::string path = WriteHandPose("ok", {0, 2, 1}, 92);
  auto t = ReadKeypointsFile(DefaultFileSystem(), path, KeypointsPart::kHandPose);
  ASSERT_OK(t);
  EXPECT_EQ((*t)->num_rows(), 3);
}

TEST(ReadKeypointsFile, NamesFileColumnExpectedAndFound) {
  const std::string wrong_width = WriteHandPose("width", {0}, 90);
  auto a = ReadKeypointsFile(DefaultFileSystem(), wrong_width, KeypointsPart::kHandPose);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), wrong_width + ": column hand_data holds 90 values per row, expected 92 "
                                                "(fixed_size_list<float>[92])");
  arrow::Int64Builder b;
  ASSERT_OK(b.Append(1));
  const std::string wrong_type = WriteHandPose("type", {0}, 92, b.Finish().ValueOrDie());
  auto c = ReadKeypointsFile(DefaultFileSystem(), wrong_type, KeypointsPart::kHandPose);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), wrong_type + ": column num_hands is int64, expected int32");
  auto d = ReadKeypointsFile(DefaultFileSystem(), WriteHandPose("dup", {4, 4}, 92), KeypointsPart::kHandPose);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), ::testing::HasSubstr("frame_index 4 appears more than once"));
  auto e = ReadKeypointsFile(DefaultFileSystem(), wrong_type, KeypointsPart::kHandPose3d);
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), ::testing::HasSubstr("column hand_0_present is missing (expected bool"));
}

TEST(ReadKeypointsFile, BoundsComeFirst) {
  const std::string path = WriteHandPose("bounds", {0, 1, 2}, 92);
  auto rows = ReadKeypointsFile(DefaultFileSystem(), path, KeypointsPart::kHandPose, {.max_rows = 2});
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message(), path + ": 3 rows, more than the keypoints row limit of 2");
  auto bytes = ReadKeypointsFile(DefaultFileSystem(), path, KeypointsPart::kHandPose, {.max_file_bytes = 10});
  ASSERT_FALSE(bytes.ok());
  EXPECT_THAT(bytes.status().message(), ::testing::HasSubstr("more than the keypoints file limit of 10"));
}

}  // namespace
}  // namespace reel
