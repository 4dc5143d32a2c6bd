// The checkpoint layouts prog/init can write, by the name --layout gives them.
#include "checkpoint/checkpoint.h"

namespace initrt {

namespace {

struct NamedLayout {
  const char *name;
  const CheckpointLayout &(*layout)();
};

const NamedLayout kLayouts[] = {
    {"hf", hfLayout},
    {"dcp", dcpLayout},
    {"ranks", ranksLayout},
};

} // namespace

const CheckpointLayout *checkpointLayout(const std::string &name) {
  for (const NamedLayout &entry : kLayouts)
    if (name == entry.name)
      return &entry.layout();
  return nullptr;
}

std::vector<std::string> checkpointLayoutNames() {
  std::vector<std::string> names;
  for (const NamedLayout &entry : kLayouts)
    names.push_back(entry.name);
  return names;
}

} // namespace initrt
