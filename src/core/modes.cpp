// The mode table (seeds §2.5): what each mode binds and the dispatch geometry it accepts.
#include "core/modes.hpp"

namespace iron {

namespace {
constexpr Mode kModes[] = {Mode::Elementwise, Mode::Reduction, Mode::Grid3D, Mode::Tile2D, Mode::SimdGroup2D};
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::Elementwise: return "Elementwise";
    case Mode::Reduction: return "Reduction";
    case Mode::Grid3D: return "Grid3D";
    case Mode::Tile2D: return "Tile2D";
    case Mode::SimdGroup2D: return "SimdGroup2D";
  }
  return "?";
}

bool parse_mode(std::string_view s, Mode& out) {
  for (Mode m : kModes)
    if (s == mode_name(m)) {
      out = m;
      return true;
    }
  return false;
}

namespace ir {

namespace {

// Highest axis (exclusive) at which `m` binds a per-axis built-in; 0 when it does not bind it.
// thread_id is the global thread position: Elementwise has the flat index (axis 0) only,
// Grid3D all three axes. The threadgroup-position family (program_id, num_programs) and the
// threadgroup-local family (local_id, group_size) follow the seeds' table: Tile2D binds both
// in 2-D, SimdGroup2D the threadgroup position in 3-D and, within the group, lanes and lane
// groups instead of local ids.
int axes_bound(Mode m, Op op) {
  switch (op) {
    case Op::ThreadId: return m == Mode::Elementwise ? 1 : m == Mode::Grid3D ? 3 : 0;
    case Op::ProgramId: case Op::NumPrograms:
      return m == Mode::Reduction || m == Mode::SimdGroup2D ? 3 : m == Mode::Tile2D ? 2 : 0;
    case Op::LocalId: case Op::GroupSize:
      return m == Mode::Reduction ? 3 : m == Mode::Tile2D ? 2 : 0;
    default: return -1;  // not a per-axis built-in
  }
}

bool is_threadgroup_memory_op(Op op) {
  return op == Op::Barrier || op == Op::TgAlloc || op == Op::TgLoad || op == Op::TgStore || is_tg_atomic(op) ||
         op == Op::AsyncCopy || op == Op::AsyncCommit || op == Op::AsyncWait || is_mbar_op(op) ||
         op == Op::BulkCopy || op == Op::FenceProxyAsync || op == Op::BulkStore || op == Op::BulkCommit ||
         op == Op::BulkWait || op == Op::TmaLoad2D || op == Op::TmaStore2D;
}

}  // namespace

bool mode_binds(Mode m, Op op, int64_t axis) {
  int axes = axes_bound(m, op);
  if (axes >= 0) return axis >= 0 && axis < axes;
  // Barriers and threadgroup memory: every mode whose threads know their threadgroup.
  if (is_threadgroup_memory_op(op)) return m == Mode::Reduction || m == Mode::Tile2D || m == Mode::SimdGroup2D;
  // Cooperative tiles: a fragment belongs to a whole lane group, so the tile ops are bound where
  // lane groups are (Reduction and SimdGroup2D); Tile2D's threadgroups need not be whole lane
  // groups and Elementwise and Grid3D bind none.
  if (is_tile_op(op)) return m == Mode::Reduction || m == Mode::SimdGroup2D;
  // setmaxnreg acts for a whole warpgroup (four lane groups): bound where lane groups are.
  if (op == Op::SetMaxNRegInc || op == Op::SetMaxNRegDec) return m == Mode::Reduction || m == Mode::SimdGroup2D;
  // Lane built-ins and lane operations (every other op with the L trait): the modes that bind
  // lane groups. Tile2D does not, so its threadgroups need not be whole lane groups.
  if (has_trait(op, trait::L)) return m == Mode::Reduction || m == Mode::SimdGroup2D;
  return true;
}

std::string modes_binding(Op op, int64_t axis) {
  std::vector<const char*> names;
  for (Mode m : kModes)
    if (mode_binds(m, op, axis)) names.push_back(mode_name(m));
  if (names.empty()) return "none";
  std::string s = names[0];
  for (size_t i = 1; i < names.size(); ++i) s += (i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
  return s;
}

std::string builtin_text(Op op, int64_t axis) {
  std::string s = mnemonic(op);
  if (axes_bound(Mode::Elementwise, op) >= 0) s += "(" + std::to_string(axis) + ")";
  return s;
}

namespace {
std::string dim_text(Dim3 d) {
  return "{" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + "}";
}
}  // namespace

void check_mode_geometry(Mode m, Dim3 grid, Dim3 tg, uint32_t lane_width, std::vector<std::string>& problems) {
  const std::string shape = "grid " + dim_text(grid) + " x threadgroup " + dim_text(tg);
  switch (m) {
    case Mode::Elementwise:
      // thread_id(0) is the only index: a second axis would run every element again.
      if (grid.y != 1 || grid.z != 1 || tg.y != 1 || tg.z != 1)
        problems.push_back(shape + ": mode Elementwise indexes threads by the flat thread_id(0) alone, so y and z "
                                   "must be 1 in both (a second axis would run every element again; declare Grid3D "
                                   "for a 3-D grid)");
      break;
    case Mode::Tile2D:
      if (grid.z != 1 || tg.z != 1)
        problems.push_back(shape + ": mode Tile2D binds axes 0 and 1 only, so z must be 1 in both (a third axis "
                                   "would run every tile again; declare Reduction or SimdGroup2D for a 3-D grid)");
      break;
    case Mode::SimdGroup2D:
      // Lane groups are formed along x first: with x a multiple of the lane width every lane
      // group is whole and lies in one (y, z) row, whatever ops the body uses.
      if (lane_width != 0 && tg.x % lane_width != 0)
        problems.push_back("threadgroup " + dim_text(tg) + ": x = " + std::to_string(tg.x) +
                           " is not a positive multiple of the lane width " + std::to_string(lane_width) +
                           " (mode SimdGroup2D works in whole lane groups)");
      break;
    case Mode::Reduction:
    case Mode::Grid3D: break;
  }
}

}  // namespace ir
}  // namespace iron
