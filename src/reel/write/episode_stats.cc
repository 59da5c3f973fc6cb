#include "write/episode_stats.h"

#include <arrow/api.h>

#include "reel/columns.h"
#include "reel/merge.h"

namespace reel::internal {

Result<std::optional<StatsBlock>> BlockFromColumn(const arrow::ChunkedArray& column) {
  std::optional<StatsBlock> total;
  for (const auto& chunk : column.chunks()) {
    const arrow::Array* fixed = chunk.get();
    int64_t rows = chunk->length(), offset = chunk->offset();
    if (chunk->type_id() == arrow::Type::LIST) {  // observation.imu: per sample
      const auto& list = static_cast<const arrow::ListArray&>(*chunk);
      rows = list.value_offset(list.length()) - list.value_offset(0);
      offset = list.values()->offset() + list.value_offset(0);
      fixed = list.values().get();
    }
    if (fixed->type_id() != arrow::Type::FIXED_SIZE_LIST) return std::optional<StatsBlock>();
    const auto& fsl = static_cast<const arrow::FixedSizeListArray&>(*fixed);
    if (fsl.values()->type_id() != arrow::Type::FLOAT) return std::optional<StatsBlock>();
    const int32_t dim = fsl.list_type()->list_size();
    // raw_values() already includes the child array's own offset.
    const float* values = static_cast<const arrow::FloatArray&>(*fsl.values()).raw_values() + offset * dim;
    StatsBlock part = BlockFromValues(values, rows, dim);
    if (!total) {
      total = std::move(part);
    } else {
      REEL_ASSIGN_OR_RETURN(*total, MergeBlocks(*total, part));
    }
  }
  return total;
}

Result<OrderedMap<StatsBlock>> EpisodeStatsFromTable(const arrow::Table& table,
                                                     const std::vector<std::string>& sensors) {
  OrderedMap<StatsBlock> out;
  for (int i = 0; i < table.num_columns(); ++i) {
    const std::string& name = table.schema()->field(i)->name();
    if (name != "observation.imu" && ClassifyColumn(name, sensors) != ColumnFamily::kGlove) continue;
    REEL_ASSIGN_OR_RETURN(auto block, BlockFromColumn(*table.column(i)));
    if (!block) return Status::Invalid("column \"" + name + "\" is not a float32 vector column");
    out.emplace_back(name, std::move(*block));
  }
  return out;
}

}  // namespace reel::internal
