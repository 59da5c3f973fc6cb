// Internal: stats.json blocks computed from a data parquet table (contract §4), for
// writers that receive finished episodes (the import server) and for rebuilding blocks
// that lack `count`. The recorder accumulates the same blocks while it writes rows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reel/metadata.h"
#include "reel/status.h"

namespace arrow {
class ChunkedArray;
class Table;
}  // namespace arrow

namespace reel::internal {

// The block of one column: fixed_size_list<float32>[dim] counts every row (zero-filled
// rows included, as for glove columns); list<fixed_size_list<float32>[dim]> (IMU
// samples) counts every sample. nullopt for a column of any other type.
Result<std::optional<StatsBlock>> BlockFromColumn(const arrow::ChunkedArray& column);

// The blocks of one episode, in schema order: every glove column (ClassifyColumn with
// `sensors`) and observation.imu, exactly the blocks the recorder produces.
Result<OrderedMap<StatsBlock>> EpisodeStatsFromTable(const arrow::Table& table,
                                                     const std::vector<std::string>& sensors);

}  // namespace reel::internal
