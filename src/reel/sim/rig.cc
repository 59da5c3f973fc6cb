// The simulated rig (see reel/simulate.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>

#include "reel/decode.h"
#include "reel/simulate.h"

namespace reel {

namespace {

constexpr double kPi = 3.14159265358979323846;

const char* kGripperAxes = R"({"+X": "down", "+Y": "left", "+Z": "forward"})";
const char* kGripperTime = R"({"t": "sensor_s", "clock": "camera_sensor", "epoch": "enter_press"})";
const char* kEgoAxes = R"({"+X": "right", "+Y": "down", "+Z": "forward"})";
const char* kEgoTime = R"({"t": "sensor_s", "clock": "camera_sensor", "epoch": "first_frame"})";

std::string StereoCalibration(const char* name, int w, int h, double baseline) {
  const std::string cam = "{\"intrinsic\": [600.0, 600.0, " + std::to_string(w / 2) + ".0, " +
                          std::to_string(h / 2) + ".0], \"distortion\": [0.0, 0.0, 0.0, 0.0, 0.0]}";
  return std::string("{\"type\": \"stereo_rgbd_camera\", \"name\": \"") + name +
         "\", \"resolution\": [" + std::to_string(w) + ", " + std::to_string(h) +
         "], \"fps\": 30.0, \"baseline\": " + std::to_string(baseline) + ", \"left_camera\": " + cam +
         ", \"right_camera\": " + cam + ", \"depth_scale\": 0.001, \"cam_imu_timeshift\": 0.0}";
}

// Contact force fz in mN at time t of the episode: two smooth presses.
double ContactFz(double t, double seconds, double peak) {
  const double a = 0.15 * seconds, b = 0.45 * seconds, c = 0.55 * seconds, d = 0.9 * seconds;
  auto bump = [](double x, double lo, double hi) {
    if (x <= lo || x >= hi) return 0.0;
    const double s = std::sin(kPi * (x - lo) / (hi - lo));
    return s * s;
  };
  return peak * (bump(t, a, b) + 0.6 * bump(t, c, d));
}

// A (250, 250, 3) force frame whose fz plane sums to fz (and fx, fy planes to fx, fy):
// a Gaussian contact patch centred at (cx, cy).
std::vector<float> ForceFrame(double fx, double fy, double fz, double cx, double cy) {
  constexpr int kSide = 250;
  // A compact patch: every pixel carries enough force that the int16 tiers' rounding
  // stays far below the total (a long sub-quantum tail would vanish at x10).
  constexpr double kSigma = 3.0;
  std::vector<double> w(kSide * kSide);
  double total = 0;
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x) {
      const double dx = x - cx, dy = y - cy;
      const double v = std::exp(-(dx * dx + dy * dy) / (2 * kSigma * kSigma));
      w[y * kSide + x] = v < 0.05 ? 0.0 : v;
      total += w[y * kSide + x];
    }
  std::vector<float> frame(kForceMatrixValues, 0.0f);
  if (total <= 0) return frame;
  for (int i = 0; i < kSide * kSide; ++i) {
    const double share = w[i] / total;
    frame[3 * i + 0] = static_cast<float>(fx * share);
    frame[3 * i + 1] = static_cast<float>(fy * share);
    frame[3 * i + 2] = static_cast<float>(fz * share);
  }
  return frame;
}

std::vector<float> GloveFrame(double pressure, double phase) {
  std::vector<float> g(256, 0.0f);
  if (pressure <= 0) return g;
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) {
      const double dx = x - 7.5 - 3 * std::sin(phase), dy = y - 7.5;
      g[y * 16 + x] = static_cast<float>(pressure * std::exp(-(dx * dx + dy * dy) / 18.0));
    }
  return g;
}

// Frame i of camera `pattern`: smooth colour gradients drifting with time and a bright
// square crossing the view, so the encoder sees motion. `phase` shifts the blue gradient
// per episode (EpisodePhase), so that no two episodes' videos are alike, as on a real rig.
void RgbFrame(int64_t i, int pattern, int phase, int w, int h, uint8_t* out) {
  const int sx = static_cast<int>((i * 3 + pattern * 37) % (w + 40)) - 40;
  const int sy = h / 3 + pattern * 9 % (h / 2);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = out + (static_cast<size_t>(y) * w + x) * 3;
      const bool square = x >= sx && x < sx + 40 && y >= sy && y < sy + 40;
      p[0] = square ? 250 : static_cast<uint8_t>((x + i + pattern * 40) & 255);
      p[1] = square ? 240 : static_cast<uint8_t>((y * 2 + pattern * 25) & 255);
      p[2] = square ? 60 : static_cast<uint8_t>(((x + y) / 2 + 3 * i + phase) & 255);
    }
}

// Depth frame i in mm: a floor plane from 700 mm (bottom) to 4000 mm (top), a box at
// 450 mm passing in front, and a no-depth (0) border.
void DepthFrame(int64_t i, int w, int h, uint16_t* out) {
  const int bx = static_cast<int>((i * 4) % (w + 60)) - 60;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint16_t mm = static_cast<uint16_t>(4000 - 3300 * y / std::max(1, h - 1));
      if (x >= bx && x < bx + 60 && y > h / 4 && y < h / 4 + 60) mm = 450;
      if (x < 4 || y < 4) mm = 0;
      out[static_cast<size_t>(y) * w + x] = mm;
    }
}

}  // namespace

std::vector<VideoSlotOptions> RigVideoSlots(const SimulateOptions& options) {
  if (!options.video) return {};
  const int w = options.video_width, h = options.video_height;
  return {
      {"stereo_left", w, h, false, ""},   {"stereo_right", w, h, false, ""},
      {"stereo_depth", w, h, true, "stereo_left"},
      {"gripper_rgb", w, h, false, ""},   {"gripper_2_rgb", w, h, false, ""},
      {"d435_rgb", w, h, false, ""},      {"d435_depth", w, h, true, "d435_rgb"},
      {"head_left_rgb", w, h, false, ""},
  };
}

TaskWriterOptions SimulatedRigOptions(const std::string& task_name, const SimulateOptions& options) {
  TaskWriterOptions o;
  o.task_name = task_name;
  o.fps = options.fps;
  // Each device with the columns it writes (multi-device §6.4's additive binding): a glove's
  // sensor_column, a gripper's sensor_columns and rig, the ego head's IMU and trajectory.
  const auto gripper_columns = [](const std::string& p) {
    return std::vector<std::string>{p + "gripper_state", p + "gripper_left_force", p + "gripper_right_force",
                                    p + "gripper_left_force_ns", p + "gripper_right_force_ns",
                                    p + "gripper_left_force_matrix", p + "gripper_left_force_matrix_ns",
                                    (p.empty() ? "" : "gripper_2_") + std::string("slam_trajectory"),
                                    (p.empty() ? "" : "gripper_2_") + std::string("slam_trajectory_ns")};
  };
  o.devices = {
      {"s80m:000000000001@1-3.4.1", "s80m", "S80C_head", {"stereo_left", "stereo_right", "stereo_depth"},
       StereoCalibration("head_stereo", 1280, 800, 0.095), "", {"imu", "ego_slam_trajectory",
       "ego_slam_trajectory_ns"}, 0},
      {"gripper:CC:BA:97:25:B4:44", "gripper", "UMI 夹爪001",
       {"gripper_stereo_left", "gripper_rgb", "gripper_pose", "gripper_force_left", "gripper_force_right"}, "", "",
       gripper_columns(""), 1},
      {"gripper:68:EE:8F:C6:0D:BC", "gripper", "UMI 夹爪002",
       {"gripper_2_stereo_left", "gripper_2_rgb", "gripper_2_pose", "gripper_2_force_left",
        "gripper_2_force_right"}, "", "", gripper_columns("gripper_2_"), 2},
      {"usbglove:364933593535", "data_ble", "USB 手套_left", {}, "", "left_glove", {}, 0},
      {"usbglove:364133593535", "data_ble", "USB 手套_right", {}, "", "right_glove", {}, 0},
      {"d435:213622075531", "d435", "D435_wrist", {"d435_rgb", "d435_depth"},
       StereoCalibration("d435", 640, 480, 0.05), "", {}, 0},
      {"uvc:usb-DECXIN_0001", "uvc", "head_cam", {"head_left_rgb"}, "", "", {}, 0},
  };
  o.video.slots = RigVideoSlots(options);
  o.force_matrix_tiers = {{"observation.gripper_left_force_matrix", options.tier},
                          {"observation.gripper_2_gripper_left_force_matrix", options.tier}};
  o.slam_trajectories = {
      {"observation.slam_trajectory", "down_left_forward", kGripperAxes, kGripperTime,
       R"({"role": "gripper", "rig": 1, "device_key": "gripper:CC:BA:97:25:B4:44"})", "gripper_stereo_left"},
      {"observation.gripper_2_slam_trajectory", "down_left_forward", kGripperAxes, kGripperTime,
       R"({"role": "gripper", "rig": 2, "device_key": "gripper:68:EE:8F:C6:0D:BC"})", "gripper_2_stereo_left"},
      {"observation.ego_slam_trajectory", "ego_cam_optical", kEgoAxes, kEgoTime,
       R"({"role": "ego", "device_key": "s80m:000000000001@1-3.4.1"})", "stereo_left"},
  };
  return o;
}

namespace {

// Pushes the rig's video frames for row i, then appends the row.
class RigAppender {
 public:
  RigAppender(EpisodeWriter& writer, const SimulateOptions& options, int phase = 0)
      : writer_(writer), options_(options), phase_(phase) {}

  Status Open() {
    for (const VideoSlotOptions& s : RigVideoSlots(options_)) {
      REEL_ASSIGN_OR_RETURN(VideoStream * stream, writer_.Video(s.slot));
      sources_.push_back({stream, s.depth, static_cast<int>(sources_.size())});
    }
    const size_t pixels = static_cast<size_t>(options_.video_width) * options_.video_height;
    rgb_.resize(pixels * 3);
    depth_.resize(pixels);
    return Status::OK();
  }

  Status Append(const FrameRow& row) {
    const int w = options_.video_width, h = options_.video_height;
    for (const Source& src : sources_) {
      if (src.depth) {
        // The D435 depth source misses the frames its depth_dup column marks.
        if (src.stream->slot() == "d435_depth" && i_ % 29 == 28) continue;
        DepthFrame(i_ + src.pattern * 7, w, h, depth_.data());
        REEL_RETURN_IF_ERROR(src.stream->PushDepth(depth_));
      } else {
        RgbFrame(i_, src.pattern, phase_, w, h, rgb_.data());
        REEL_RETURN_IF_ERROR(src.stream->PushRgb(rgb_));
      }
    }
    ++i_;
    return writer_.AppendFrame(row);
  }

 private:
  struct Source {
    VideoStream* stream;
    bool depth;
    int pattern;
  };
  EpisodeWriter& writer_;
  const SimulateOptions& options_;
  int phase_;
  std::vector<Source> sources_;
  std::vector<uint8_t> rgb_;
  std::vector<uint16_t> depth_;
  int64_t i_ = 0;
};

// The blue gradient's shift for episode N of a seed: 0 for seed 1's episode 1, distinct
// for the next 255 episodes of a seed.
int EpisodePhase(uint64_t seed, int64_t episode) {
  return static_cast<int>(((seed - 1) * 7 + static_cast<uint64_t>(episode - 1) * 29) & 255);
}

}  // namespace

Status SimulateEpisode(EpisodeWriter& writer, const SimulateOptions& options, int64_t episode) {
  RigAppender appender(writer, options, EpisodePhase(options.seed, episode));
  REEL_RETURN_IF_ERROR(appender.Open());
  return SimulateRows(options, episode, [&](const FrameRow& row) { return appender.Append(row); });
}

Status AppendSimulatedRows(EpisodeWriter& writer, const SimulateOptions& options,
                           const std::vector<FrameRow>& rows) {
  RigAppender appender(writer, options);
  REEL_RETURN_IF_ERROR(appender.Open());
  for (const FrameRow& row : rows) REEL_RETURN_IF_ERROR(appender.Append(row));
  return Status::OK();
}

Status SimulateRows(const SimulateOptions& options, int64_t episode,
                    const std::function<Status(const FrameRow&)>& sink) {
  std::mt19937_64 rng(options.seed * 1000003ULL + static_cast<uint64_t>(episode));
  std::normal_distribution<double> noise(0.0, 1.0);
  const int64_t rows = static_cast<int64_t>(std::llround(options.seconds * options.fps));
  const double period = 1.0 / options.fps;
  const int64_t period_ns = static_cast<int64_t>(std::llround(1e9 * period));
  // wall_time is host Unix time from the episode's start (the episodes row's created_at
  // is taken at BeginEpisode, on the same clock).
  const double wall0 =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const int64_t host0 = 5'000'000'000'000LL + episode * 10'000'000'000'000LL;  // host monotonic ns
  const int64_t device0 = 1'000'000'000LL * (7 + episode);                      // IMU device clock
  int64_t imu_next = device0;
  const int64_t imu_step = 2'500'000;  // 400 Hz
  for (int64_t i = 0; i < rows; ++i) {
    const double t = static_cast<double>(i) * period;
    const int64_t hw = host0 + i * period_ns;
    FrameRow row;
    row.timestamp = t;
    row.wall_time = wall0 + t;
    row.hardware_ns = hw;
    // The head camera's SDK stamp before normalisation (multi-device §3.1, §4.4): the IMU's
    // device clock, with 0.2 ms of jitter; hardware_ns is the normalised host-time sequence.
    row.raw_hw_ns = device0 + i * period_ns + static_cast<int64_t>(200'000 * noise(rng));
    // Grippers: a press with matching force sensor, state and force matrix.
    for (int rig = 1; rig <= 2; ++rig) {
      const std::string p = rig == 1 ? "observation." : "observation.gripper_2_";
      const double fz = ContactFz(t + 0.1 * (rig - 1), options.seconds, rig == 1 ? 2400.0 : 1800.0);
      const double fx = 0.08 * fz + (fz > 0 ? 3 * noise(rng) : 0), fy = -0.05 * fz;
      row.SetFixed(p + "gripper_left_force", {static_cast<float>(fx), static_cast<float>(fy), static_cast<float>(fz)});
      row.SetFixed(p + "gripper_right_force", {static_cast<float>(-fx), static_cast<float>(-fy), static_cast<float>(0.9 * fz)});
      row.SetScalar(p + "gripper_left_force_ns", hw - 3'000'000);
      row.SetScalar(p + "gripper_right_force_ns", hw - 2'000'000);
      const double open = 100.0 * (1.0 - std::min(1.0, fz / 800.0));
      row.SetFixed(p + "gripper_state", {static_cast<float>(open), fz > 200 ? 1.0f : 0.0f, static_cast<float>(fz)});
      if (i % 2 == 0)  // the matrix pump runs at half the frame rate
        row.SetForceMatrix(p + "gripper_left_force_matrix",
                           ForceFrame(fx, fy, fz, 125 + 20 * std::sin(t), 125 + 10 * rig), hw - 1'000'000);
      // SLAM at camera rate: one point per row, with a dropped frame now and then.
      if (i % 11 != 5) {
        const double a = 0.6 * t + rig;
        row.AddSlamPoint(rig == 1 ? "observation.slam_trajectory" : "observation.gripper_2_slam_trajectory",
                         {12.5 + t, 0.3 * std::cos(a), 0.3 * std::sin(a), 0.1 * t, 0.0, 0.0,
                          std::sin(a / 2), std::cos(a / 2)},
                         hw);
      }
    }
    // Ego head: IMU at 400 Hz (samples whose device time falls in this frame), ego SLAM.
    const int64_t frame_end = device0 + (i + 1) * period_ns;
    while (imu_next < frame_end) {
      const double ts = static_cast<double>(imu_next - device0) * 1e-9;
      row.AddImuSample(imu_next, {static_cast<float>(0.05 * noise(rng) + 0.2 * std::sin(ts)),
                                  static_cast<float>(0.05 * noise(rng)),
                                  static_cast<float>(9.81 + 0.05 * noise(rng)),
                                  static_cast<float>(0.01 * noise(rng)), static_cast<float>(0.3 * std::cos(ts)),
                                  static_cast<float>(0.01 * noise(rng))});
      imu_next += imu_step;
    }
    row.AddSlamPoint("observation.ego_slam_trajectory",
                     {t, 0.05 * t, 1.6, 0.02 * std::sin(t), 0.0, 0.0, 0.0, 1.0}, hw);
    // Gloves: pressure during the grip, zero rows otherwise (they still count in stats).
    for (const char* side : {"left", "right"}) {
      const std::string s = std::string("observation.") + side + "_glove";
      const double pressure = ContactFz(t, options.seconds, 60.0);
      row.SetFixed(s, GloveFrame(pressure, t));
      std::vector<float> quat(64), valid(16, 1.0f);
      for (int k = 0; k < 16; ++k) {
        const double h = 0.1 * k + 0.2 * t;
        quat[4 * k + 2] = static_cast<float>(std::sin(h / 2));
        quat[4 * k + 3] = static_cast<float>(std::cos(h / 2));
      }
      row.SetFixed(s + "_imu_quat", quat);
      row.SetFixed(s + "_imu_valid", valid);
      row.SetFixed(std::string("observation.") + side + "_hand_pose", std::vector<float>(63, 0.0f));
      row.SetStatus(std::string("status.") + side + "_glove", "connected");
    }
    row.SetStatus("status.head_left_rgb", "connected");
    // D435 forensic columns.
    row.SetScalar("depth_ns", hw + 1'500'000);
    row.SetScalar("host_ns", hw + 4'000'000);
    row.SetScalar("rgb_dup", 0);
    row.SetScalar("depth_dup", i % 29 == 28 ? 1 : 0);
    row.SetScalar("ts_src", 1);
    row.SetScalar("rgb_gap", 0);
    row.SetScalar("depth_gap", i % 29 == 28 ? 33 : 0);
    REEL_RETURN_IF_ERROR(sink(row));
  }
  return Status::OK();
}

}  // namespace reel
