// FFmpeg over FileSystem (video/avio_fs.h): the encoder writes and the reader reads
// every byte through a FileSystem, so FileSystemWrapper faults reach them: a write
// error or a read error mid-decode comes back as a clean Status, never a crash.
#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/video.h"

namespace reel {
namespace {

// A RandomAccessFile forwarding to another; ReadAt fails while `fail` is set.
class FaultyReadFile final : public arrow::io::RandomAccessFile {
 public:
  FaultyReadFile(std::shared_ptr<arrow::io::RandomAccessFile> f, std::atomic<bool>* fail,
                 std::atomic<int>* reads)
      : f_(std::move(f)), fail_(fail), reads_(reads) {}
  arrow::Status Close() override { return f_->Close(); }
  bool closed() const override { return f_->closed(); }
  arrow::Result<int64_t> Tell() const override { return f_->Tell(); }
  arrow::Status Seek(int64_t position) override { return f_->Seek(position); }
  arrow::Result<int64_t> GetSize() override { return f_->GetSize(); }
  arrow::Result<int64_t> Read(int64_t n, void* out) override { return f_->Read(n, out); }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t n) override { return f_->Read(n); }
  arrow::Result<int64_t> ReadAt(int64_t pos, int64_t n, void* out) override {
    ++*reads_;
    if (*fail_) return arrow::Status::IOError("injected read fault at byte ", pos);
    return f_->ReadAt(pos, n, out);
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t pos, int64_t n) override {
    ++*reads_;
    if (*fail_) return arrow::Status::IOError("injected read fault at byte ", pos);
    return f_->ReadAt(pos, n);
  }

 private:
  std::shared_ptr<arrow::io::RandomAccessFile> f_;
  std::atomic<bool>* fail_;
  std::atomic<int>* reads_;
};

// Counts writes (Append / WriteAt) and reads; fails the fail_append-th Append, and
// every ReadAt while fail_reads is set.
class CountingFs final : public FileSystemWrapper {
 public:
  CountingFs() : FileSystemWrapper(DefaultFileSystem()) {}
  std::atomic<int> appends{0}, write_ats{0}, reads{0};
  std::atomic<int> fail_append{0};
  std::atomic<bool> fail_reads{false};

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    REEL_ASSIGN_OR_RETURN(auto file, target()->NewWritableFile(path));
    return std::unique_ptr<WritableFile>(new File(this, std::move(file)));
  }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(const std::string& path) override {
    REEL_ASSIGN_OR_RETURN(auto file, target()->OpenRandomAccess(path));
    return std::shared_ptr<arrow::io::RandomAccessFile>(new FaultyReadFile(file, &fail_reads, &reads));
  }

 private:
  class File final : public WritableFileWrapper {
   public:
    File(CountingFs* fs, std::unique_ptr<WritableFile> f) : WritableFileWrapper(std::move(f)), fs_(fs) {}
    Status Append(std::string_view d) override {
      if (++fs_->appends == fs_->fail_append) return Status::IOError("injected video write fault");
      return target()->Append(d);
    }
    Status WriteAt(uint64_t o, std::string_view d) override {
      ++fs_->write_ats;
      return target()->WriteAt(o, d);
    }

   private:
    CountingFs* fs_;
  };
};

class AvioFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_avio_fs.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Encodes `frames` noisy RGB frames to `path` through `fs`.
  Status Encode(FileSystem* fs, const std::string& path, VideoKind kind, int frames) {
    VideoEncoderOptions o;
    o.kind = kind;
    o.width = kW;
    o.height = kH;
    o.fps = 10;
    o.fs = fs;
    o.sync_on_finish = true;
    REEL_ASSIGN_OR_RETURN(auto enc, VideoEncoder::Open(path, o));
    uint32_t seed = 7;
    std::vector<uint8_t> rgb(kW * kH * 3);
    std::vector<uint16_t> mm(kW * kH);
    for (int f = 0; f < frames; ++f) {
      for (auto& b : rgb) b = static_cast<uint8_t>((seed = seed * 1103515245 + 12345) >> 24);
      for (auto& v : mm) v = static_cast<uint16_t>(300 + ((seed = seed * 1103515245 + 12345) >> 22));
      REEL_RETURN_IF_ERROR(kind == VideoKind::kRgb ? enc->AddRgb(rgb) : enc->AddDepth(mm));
    }
    return enc->Finish();
  }

  static constexpr int kW = 160, kH = 120;
  std::string dir_;
};

TEST_F(AvioFsTest, EncoderWritesThroughTheFileSystemWithPositionedWrites) {
  for (VideoKind kind : {VideoKind::kRgb, VideoKind::kDepthFfv1}) {
    CountingFs fs;
    const std::string path = JoinPath(dir_, std::string(".v.") + VideoExtension(kind));
    ASSERT_TRUE(Encode(&fs, path, kind, 20).ok());
    EXPECT_GT(fs.appends, 1);
    EXPECT_GT(fs.write_ats, 0) << "the muxer patches its headers through WriteAt";
    VideoReaderOptions ro;
    ro.fs = &fs;
    auto reader = VideoReader::Open(path, ro);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    EXPECT_EQ((*reader)->info().frames, 20);
    EXPECT_GT(fs.reads, 0) << "the reader reads through the FileSystem";
  }
}

TEST_F(AvioFsTest, WriteFaultIsReturnedAsTheFileSystemsStatus) {
  CountingFs fs;
  fs.fail_append = 3;
  Status st = Encode(&fs, JoinPath(dir_, "w.mp4"), VideoKind::kRgb, 30);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIOError) << st.ToString();
  EXPECT_NE(st.message().find("injected video write fault"), std::string::npos) << st.ToString();
}

TEST_F(AvioFsTest, ReadFaultMidDecodeIsACleanStatusAndTheReaderRecovers) {
  const std::string path = JoinPath(dir_, "r.mp4");
  ASSERT_TRUE(Encode(DefaultFileSystem(), path, VideoKind::kRgb, 30).ok());
  CountingFs fs;
  VideoReaderOptions ro;
  ro.fs = &fs;
  auto reader = VideoReader::Open(path, ro);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::vector<int64_t> all(30);
  for (int i = 0; i < 30; ++i) all[i] = i;
  std::vector<uint8_t> want(30 * kW * kH * 3), got(want.size());
  ASSERT_TRUE((*reader)->ReadRgb({all.data(), 5}, {want.data(), 5 * kW * kH * 3}).ok());

  fs.fail_reads = true;  // mid-decode: the next packets cannot be read
  Status st = (*reader)->ReadRgb(std::span<const int64_t>(all).subspan(5), {got.data(), 25 * kW * kH * 3});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIOError) << st.ToString();
  EXPECT_NE(st.message().find("injected read fault"), std::string::npos) << st.ToString();

  fs.fail_reads = false;
  ASSERT_TRUE((*reader)->ReadRgb(all, want).ok());
  auto fresh = VideoReader::Open(path);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*fresh)->ReadRgb(all, got).ok());
  EXPECT_EQ(got, want) << "frames after the recovered fault differ";
}

}  // namespace
}  // namespace reel
