// meta/info.json, stats.json, tasks.jsonl and episodes rows (contract §3-§6, multi-device
// §6 and Appendix B).
#include <arrow/api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reel/metadata.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

using OJson = nlohmann::ordered_json;

// A trimmed copy of multi-device Appendix B (same keys and order, fewer features/devices).
constexpr const char* kAppendixB = R"json({
  "format": "pooled_episodes_v1",
  "chunks_size": 1000,
  "data_path": "data/chunk-{c:03d}/episode-{f:03d}.parquet",
  "video_path": "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}",
  "episodes_path": "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
  "codebase_version": "v3.0",
  "app_version": "1.4.0",
  "fps": 30.0,
  "video": true,
  "task_name": "示例任务",
  "features": {
    "observation.left_glove": {"dtype": "float32", "shape": [16, 16]},
    "observation.imu": {"dtype": "float32", "shape": [6]},
    "observation.gripper_left_force_ns": {"dtype": "int64", "shape": [1], "encoding": "host_monotonic_ns"},
    "observation.gripper_left_force_matrix": {"dtype": "int16", "shape": [250, 250, 3], "encoding": "row_diff_quantized", "scale": 10},
    "observation.slam_trajectory": {
      "dtype": "float64", "shape": [8], "encoding": "flat_points_8_txyz_qxyzw",
      "frame": "down_left_forward",
      "frame_axes": {"+X": "down", "+Y": "left", "+Z": "forward"},
      "time": {"t": "sensor_s", "clock": "camera_sensor", "epoch": "enter_press"},
      "owner": {"role": "gripper", "rig": 1, "device_key": "gripper:CC:BA:97:25:B4:44"},
      "source_slot": "gripper_stereo_left"
    },
    "observation.slam_trajectory_ns": {"dtype": "int64", "shape": [1], "encoding": "flat_parallel_to_slam_trajectory", "clock": "host_monotonic_ns"},
    "action": {"dtype": "float32", "shape": [1]}
  },
  "cameras": {
    "stereo_left": {"height": 800, "width": 1280},
    "gripper_rgb": {"height": 960, "width": 1280}
  },
  "video_extensions": {"stereo_left": "mp4", "stereo_depth": "mp4", "gripper_rgb": "mp4"},
  "devices": [
    {"key": "s80m:000000000001@1-3.4.1", "kind": "s80m", "name": "S80C_head",
     "slots": ["stereo_left", "stereo_right", "stereo_depth"]},
    {"key": "gripper:CC:BA:97:25:B4:44", "kind": "gripper", "name": "UMI 夹爪001",
     "slots": ["gripper_stereo_left", "gripper_rgb", "gripper_pose",
               "gripper_force_left", "gripper_force_right"]},
    {"key": "usbglove:364933593535", "kind": "data_ble", "name": "USB 手套_left", "slots": []}
  ],
  "device_names": {"stereo_left": "S80C_head", "gripper_rgb": "UMI 夹爪001"},
  "sensors": ["left_glove", "right_glove"],
  "sensor_dim": 256,
  "created_at": 1790000000.0,
  "calibration": {
    "head_stereo": {"type": "stereo_rgbd_camera", "name": "head_stereo", "resolution": [1280, 800],
                    "fps": 30.0, "baseline": 0.095, "depth_scale": 0.001, "cam_imu_timeshift": 0.0}
  },
  "total_episodes": 1,
  "gripper_slam_frame": "down_left_forward",
  "slam_frames": {"observation.slam_trajectory": "down_left_forward"}
})json";

const char* kPath = "tasks/demo/meta/info.json";

TEST(ParseInfoJson, AppendixBTypedFields) {
  auto r = ParseInfoJson(kAppendixB, kPath);
  ASSERT_OK(r);
  const InfoJson& info = *r;
  EXPECT_EQ(info.format, "pooled_episodes_v1");
  EXPECT_EQ(info.chunks_size, 1000);
  EXPECT_EQ(info.codebase_version, "v3.0");
  EXPECT_EQ(info.app_version, "1.4.0");
  EXPECT_EQ(info.fps, 30.0);
  EXPECT_TRUE(info.video);
  EXPECT_EQ(info.task_name, "示例任务");
  EXPECT_EQ(info.sensors, (std::vector<std::string>{"left_glove", "right_glove"}));
  EXPECT_EQ(info.sensor_dim, 256);
  EXPECT_EQ(info.created_at, 1790000000.0);
  EXPECT_EQ(info.total_episodes, 1);
  EXPECT_EQ(info.gripper_slam_frame, "down_left_forward");
  ASSERT_EQ(info.slam_frames.size(), 1u);
  EXPECT_EQ(info.slam_frames[0].second, "down_left_forward");
  EXPECT_TRUE(info.Has("calibration"));
  EXPECT_FALSE(info.Has("stats"));
  EXPECT_EQ(OJson::parse(info.calibration_json)["head_stereo"]["baseline"], 0.095);

  ASSERT_EQ(info.features.size(), 7u);
  EXPECT_EQ(info.features[0].first, "observation.left_glove");  // file order
  EXPECT_EQ(info.features[6].first, "action");
  const FeatureSpec* glove = info.Feature("observation.left_glove");
  ASSERT_NE(glove, nullptr);
  EXPECT_EQ(glove->shape, (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(glove->ElementCount(), 256);
  const FeatureSpec* fm = info.Feature("observation.gripper_left_force_matrix");
  ASSERT_NE(fm, nullptr);
  EXPECT_EQ(fm->dtype, "int16");
  EXPECT_EQ(fm->encoding, "row_diff_quantized");
  EXPECT_EQ(fm->scale, 10.0);
  EXPECT_EQ(fm->ElementCount(), 187500);
  const FeatureSpec* slam = info.Feature("observation.slam_trajectory");
  ASSERT_NE(slam, nullptr);
  EXPECT_EQ(slam->frame, "down_left_forward");
  EXPECT_EQ(slam->source_slot, "gripper_stereo_left");
  EXPECT_FALSE(slam->scale.has_value());
  EXPECT_EQ(OJson::parse(slam->owner_json)["rig"], 1);
  EXPECT_EQ(OJson::parse(slam->frame_axes_json)["+Z"], "forward");
  EXPECT_EQ(OJson::parse(slam->time_json)["epoch"], "enter_press");
  EXPECT_EQ(info.Feature("observation.slam_trajectory_ns")->clock, "host_monotonic_ns");
  EXPECT_EQ(info.Feature("nope"), nullptr);

  ASSERT_EQ(info.cameras.size(), 2u);
  EXPECT_EQ(info.cameras[1].first, "gripper_rgb");
  EXPECT_EQ(info.cameras[1].second.height, 960);
  EXPECT_EQ(info.cameras[1].second.width, 1280);
  EXPECT_FALSE(info.cameras[1].second.fps.has_value());
  EXPECT_EQ(*Lookup(info.video_extensions, "stereo_depth"), "mp4");

  ASSERT_EQ(info.devices.size(), 3u);
  EXPECT_EQ(info.devices[1].key, "gripper:CC:BA:97:25:B4:44");
  EXPECT_EQ(info.devices[1].kind, "gripper");
  EXPECT_EQ(info.devices[1].name, "UMI 夹爪001");
  EXPECT_EQ(info.devices[1].slots.size(), 5u);
  EXPECT_TRUE(info.devices[2].slots.empty());
  EXPECT_EQ(*Lookup(info.device_names, "gripper_rgb"), "UMI 夹爪001");
}

std::vector<std::string> Keys(const OJson& obj) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : obj.items()) keys.push_back(k);
  return keys;
}

TEST(SerializeInfoJson, RoundTripKeepsDocumentAndUtf8) {
  auto info = ParseInfoJson(kAppendixB, kPath);
  ASSERT_OK(info);
  const std::string out = *SerializeInfoJson(*info);
  EXPECT_THAT(out, ::testing::HasSubstr("\"task_name\": \"示例任务\"")) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("UMI 夹爪001"));
  EXPECT_THAT(out, ::testing::Not(::testing::HasSubstr("\\u")));
  EXPECT_THAT(out, ::testing::HasSubstr("\n  \"format\""));  // indent 2
  // Same document, same key order at every level (ordered_json compares in order).
  EXPECT_EQ(OJson::parse(out), OJson::parse(kAppendixB));
}

TEST(SerializeInfoJson, UnknownKeysSurviveInOriginalOrder) {
  OJson doc = OJson::parse(kAppendixB);
  OJson with_unknown = OJson::object();
  for (const auto& [k, v] : doc.items()) {
    with_unknown[k] = v;
    if (k == "fps") with_unknown["x_recorder_build"] = {{"commit", "abc"}, {"备注", "中文"}};
  }
  with_unknown["features"]["observation.imu"]["unit"] = "m/s^2";
  with_unknown["zz_last"] = 7;
  auto info = ParseInfoJson(with_unknown.dump(), kPath);
  ASSERT_OK(info);
  // Edit modelled fields, as a writer does after an episode.
  info->total_episodes = 2;
  FeatureSpec extra;
  extra.dtype = "float32";
  extra.shape = {3};
  info->features.emplace_back("observation.gripper_state", extra);

  const std::string text = *SerializeInfoJson(*info);
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("\\u")));
  EXPECT_THAT(text, ::testing::HasSubstr("中文"));
  OJson out = OJson::parse(text);
  EXPECT_EQ(Keys(out), Keys(with_unknown));
  EXPECT_EQ(out["x_recorder_build"], with_unknown["x_recorder_build"]);
  EXPECT_EQ(out["zz_last"], 7);
  EXPECT_EQ(out["total_episodes"], 2);
  EXPECT_EQ(Keys(out["features"]["observation.imu"]),
            (std::vector<std::string>{"dtype", "shape", "unit"}));
  EXPECT_EQ(out["features"]["observation.imu"]["unit"], "m/s^2");
  EXPECT_EQ(Keys(out["features"]).back(), "observation.gripper_state");
}

// Multi-device §6.4: the additive binding keys are read and written back, and a device
// entry's keys reel does not model (serial, a collector's later additions) survive a rewrite.
TEST(SerializeInfoJson, DeviceBindingReadWrittenAndOtherDeviceKeysKept) {
  OJson doc = OJson::parse(kAppendixB);
  doc["devices"] = OJson::array(
      {{{"key", "usbglove:1"}, {"kind", "data_ble"}, {"name", "L"}, {"slots", OJson::array()},
        {"sensor_column", "left_glove"}, {"serial", "S1"}},
       {{"key", "gripper:AA"}, {"kind", "gripper"}, {"name", "G"}, {"slots", {"gripper_rgb"}},
        {"sensor_columns", {"gripper_state", "observation.gripper_left_force"}}, {"rig", 1}}});
  auto info = ParseInfoJson(doc.dump(), kPath);
  ASSERT_OK(info);
  ASSERT_EQ(info->devices.size(), 2u);
  EXPECT_EQ(info->devices[0].sensor_column, "left_glove");
  EXPECT_EQ(info->devices[0].BoundColumns(), std::vector<std::string>{"observation.left_glove"});
  EXPECT_EQ(info->devices[1].rig, 1);
  EXPECT_EQ(info->devices[1].BoundColumns(),
            (std::vector<std::string>{"observation.gripper_state", "observation.gripper_left_force"}));
  info->devices[1].name = "G2";
  info->devices[0].sensor_column.reset();
  const OJson out = OJson::parse(*SerializeInfoJson(*info));
  EXPECT_EQ(out["devices"][0]["serial"], "S1");
  EXPECT_FALSE(out["devices"][0].contains("sensor_column"));
  EXPECT_EQ(out["devices"][1]["name"], "G2");
  EXPECT_EQ(out["devices"][1]["rig"], 1);
  EXPECT_EQ(out["devices"][1]["sensor_columns"], doc["devices"][1]["sensor_columns"]);
  // Wrong types name the key.
  doc["devices"][1]["rig"] = "one";
  auto bad = ParseInfoJson(doc.dump(), kPath);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("rig")) << bad.status().ToString();
}

// The collector's playback rule (ui/playback_dialog.py `_seek`, its test_playback_multifps.py:
// cam_b at 25 fps in a 30 fps session of 60 rows and 50 frames).
TEST(SlotFrameOfRow, TheCollectorsPlaybackRule) {
  EXPECT_EQ(SlotFrameOfRow(0, 30, 25), 0);
  EXPECT_EQ(SlotFrameOfRow(1, 30, 25), 1);
  EXPECT_EQ(SlotFrameOfRow(3, 30, 25), 3);  // 2.5 rounds half up
  EXPECT_EQ(SlotFrameOfRow(4, 30, 25), 3);  // 3.33: the frame is held
  EXPECT_EQ(SlotFrameOfRow(59, 30, 25), 49);
  EXPECT_EQ(SlotFramesForRows(60, 30, 25), 50);
  EXPECT_EQ(SlotFrameOfRow(7, 30, 30), 7);
  EXPECT_EQ(SlotFramesForRows(7, 30, 30), 7);
  // 15 fps in 30: frames at rows 0, 2, 4, ...; 9 rows span frames 0..4, 10 rows still 0..4.
  EXPECT_EQ(SlotFramesForRows(9, 30, 15), 5);
  EXPECT_EQ(SlotFramesForRows(10, 30, 15), 5);
  EXPECT_EQ(SlotFramesForRows(1, 30, 15), 1);
  EXPECT_EQ(SlotFramesForRows(0, 30, 15), 0);
  EXPECT_EQ(SlotFrameOfRow(9, 30, 15), 5);  // one past the last: readers clamp
}

// cameras[slot].fps, else the task's; a depth slot by its device's first declared camera.
TEST(InfoJson, SlotFpsOfCamerasAndDepthSlots) {
  InfoJson info;
  info.fps = 30;
  info.cameras = {{"stereo_left", {800, 1280, std::nullopt}}, {"stereo_right", {800, 1280, 25.0}},
                  {"d435_rgb", {480, 640, 15.0}}};
  info.devices.push_back({.key = "s80m:1", .kind = "s80m", .name = "head",
                          .slots = {"stereo_left", "stereo_right", "stereo_depth"}});
  info.devices.push_back({.key = "d435:2", .kind = "d435", .name = "d435", .slots = {"d435_rgb", "d435_depth"}});
  EXPECT_EQ(info.SlotFps("stereo_left"), 30);
  EXPECT_EQ(info.SlotFps("stereo_right"), 25);
  EXPECT_EQ(info.SlotFps("stereo_depth"), 30);  // its master is stereo_left
  EXPECT_EQ(info.SlotFps("d435_depth"), 15);
  EXPECT_EQ(info.SlotFps("unknown_depth"), 30);
}

TEST(ParseInfoJson, WrongTypesAreInvalidNamingTheKey) {
  struct Case { const char* key; std::function<void(OJson&)> mutate; } cases[] = {
      {"fps", [](OJson& d) { d["fps"] = "30"; }},
      {"features", [](OJson& d) { d["features"] = OJson::array({"observation.imu"}); }},
      {"shape", [](OJson& d) { d["features"]["observation.imu"]["shape"] = "6"; }},
      {"scale", [](OJson& d) { d["features"]["observation.gripper_left_force_matrix"]["scale"] = "10"; }},
      {"chunks_size", [](OJson& d) { d["chunks_size"] = 0; }},
      {"chunks_size", [](OJson& d) { d["chunks_size"] = "1000"; }},
      {"video", [](OJson& d) { d["video"] = "true"; }},
      {"total_episodes", [](OJson& d) { d["total_episodes"] = 1.5; }},
      {"height", [](OJson& d) { d["cameras"]["stereo_left"]["height"] = "800"; }},
      {"devices", [](OJson& d) { d["devices"] = OJson::object(); }},
      {"device_names", [](OJson& d) { d["device_names"]["x"] = 1; }},
      {"sensors", [](OJson& d) { d["sensors"] = "left_glove"; }},
  };
  for (const Case& c : cases) {
    OJson doc = OJson::parse(kAppendixB);
    c.mutate(doc);
    auto r = ParseInfoJson(doc.dump(), kPath);
    ASSERT_FALSE(r.ok()) << c.key;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalid) << c.key;
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr(c.key)) << r.status().message();
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr(kPath)) << r.status().message();
  }
  EXPECT_EQ(ParseInfoJson("{\"format\": ", kPath).status().code(), StatusCode::kInvalid);
  EXPECT_EQ(ParseInfoJson("[1]", kPath).status().code(), StatusCode::kInvalid);
}

TEST(SerializeInfoJson, MalformedVerbatimFieldIsInvalidNotAThrow) {
  InfoJson info;
  info.calibration_json = "{broken";
  Result<std::string> out = Status::IOError("not serialised");
  EXPECT_NO_THROW(out = SerializeInfoJson(info));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalid);
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("calibration"));
  InfoJson with_feature;
  FeatureSpec f;
  f.dtype = "float64";
  f.frame_axes_json = "not json";
  with_feature.features.emplace_back("observation.slam_trajectory", f);
  EXPECT_NO_THROW(out = SerializeInfoJson(with_feature));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("frame_axes"));
}

// ---- stats.json -----------------------------------------------------------------

TEST(ParseStatsJson, CountNeedsRebuildAndNestedArrays) {
  auto r = ParseStatsJson(R"({
    "observation.left_glove": {"count": 10, "mean": [0.5, 1.5], "std": [1, 2], "min": [0, 0], "max": [1, 3]},
    "observation.imu": {"mean": [0.1], "std": [1.0], "min": [0.0], "max": [0.2]},
    "observation.images.top": {"count": 3, "mean": [[[0.1]], [[0.2]], [[0.3]]],
                               "std": [[[1]], [[2]], [[3]]], "min": [[[0]], [[0]], [[0]]],
                               "max": [[[1]], [[1]], [[1]]]}
  })", "meta/stats.json");
  ASSERT_OK(r);
  ASSERT_EQ(r->blocks.size(), 3u);
  const StatsBlock& glove = r->blocks[0].second;
  EXPECT_EQ(glove.count, 10);
  EXPECT_FALSE(glove.needs_rebuild());
  EXPECT_EQ(glove.mean, (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(glove.max, (std::vector<double>{1, 3}));
  EXPECT_EQ(glove.shape, (std::vector<int64_t>{2}));
  const StatsBlock& imu = r->blocks[1].second;
  EXPECT_TRUE(imu.needs_rebuild());  // v1.1.0 block without count
  EXPECT_EQ(r->blocks[2].first, "observation.images.top");
  const StatsBlock& image = r->blocks[2].second;
  EXPECT_EQ(image.mean, (std::vector<double>{0.1, 0.2, 0.3}));
  EXPECT_EQ(image.std, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(image.shape, (std::vector<int64_t>{3, 1, 1}));
}

TEST(SerializeStatsJson, ShortestDoublesAndAbsentCountKept) {
  auto r = ParseStatsJson(R"({"observation.imu": {"mean": [0.1], "std": [1], "min": [0], "max": [0.3]},
    "observation.left_glove": {"count": 2, "mean": [0.5], "std": [0.25], "min": [0], "max": [1]}})",
                          "meta/stats.json");
  ASSERT_OK(r);
  r->blocks[1].second.count = 3;
  r->blocks[1].second.mean = {1.0 / 3.0};
  const std::string text = SerializeStatsJson(*r);
  EXPECT_THAT(text, ::testing::HasSubstr("0.1")) << text;
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("0.1000"))) << text;  // shortest round-trip form
  OJson out = OJson::parse(text);
  EXPECT_FALSE(out["observation.imu"].contains("count")) << text;  // still needs a rebuild
  EXPECT_EQ(out["observation.left_glove"]["count"], 3);
  EXPECT_EQ(out["observation.left_glove"]["mean"][0].get<double>(), 1.0 / 3.0);
  EXPECT_EQ(out["observation.imu"]["max"][0].get<double>(), 0.3);
}

TEST(ParseStatsJson, WrongTypesAreInvalid) {
  for (const char* bad : {R"({"a": {"count": "10", "mean": [0]}})", R"({"a": {"mean": "x"}})",
                          R"({"a": {"mean": [0, "x"]}})", R"({"a": [1, 2]})", R"([1])", "{"}) {
    auto r = ParseStatsJson(bad, "meta/stats.json");
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalid) << bad;
  }
}

// ---- tasks.jsonl ----------------------------------------------------------------

TEST(ParseTasksJsonl, OneObjectPerLine) {
  auto one = ParseTasksJsonl("{\"task_index\": 0, \"task\": \"示例任务\"}\n", "meta/tasks.jsonl");
  ASSERT_OK(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].task_index, 0);
  EXPECT_EQ((*one)[0].task, "示例任务");

  auto blanks = ParseTasksJsonl("\n{\"task_index\": 0, \"task\": \"a\"}\n\n  \n"
                                "{\"task_index\": 1, \"task\": \"b\"}",
                                "meta/tasks.jsonl");
  ASSERT_OK(blanks);
  ASSERT_EQ(blanks->size(), 2u);
  EXPECT_EQ((*blanks)[1].task_index, 1);
  EXPECT_EQ((*blanks)[1].task, "b");
}

TEST(ParseTasksJsonl, PrettyPrintedFileIsInvalidAtLineOne) {
  auto r = ParseTasksJsonl("{\n  \"task_index\": 0,\n  \"task\": \"a\"\n}\n", "meta/tasks.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("line 1")) << r.status().message();
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("meta/tasks.jsonl"));

  auto second = ParseTasksJsonl("{\"task_index\": 0, \"task\": \"a\"}\n[1]\n", "t.jsonl");
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), ::testing::HasSubstr("line 2"))
      << second.status().message();
}

}  // namespace
}  // namespace reel
