// initc's own checkpoint layout (ir-spec/checkpoint.md) as a CheckpointLayout: each step is one
// of the shard file, index and output directory functions.
#include "checkpoint/checkpoint.h"

#include "checkpoint/output_dir.h"

#include <sys/stat.h>

namespace initrt {

namespace {

class ShardFileWriter final : public RankWriter {
public:
  bool open(const std::string &dir, const Program &program, int64_t rank,
            const std::vector<ShardTensor> &tensors, std::string &error,
            const std::string &baseStamps) {
    return stream.open(dir, program, rank, tensors, error, baseStamps);
  }
  std::vector<size_t> writeOrder() const override { return stream.fileOrder(); }
  bool writePiece(size_t index, uint64_t offset, const void *data, uint64_t bytes,
                  std::string &error) override {
    return stream.writePiece(index, offset, data, bytes, error);
  }
  bool finish(std::vector<std::string> &checksums, std::string &error) override {
    return stream.finish(checksums, error);
  }

private:
  ShardFileStream stream;
};

class RanksLayout final : public CheckpointLayout {
public:
  std::string afterRebasedRank() const override {
    return " (then rerun the whole job, so that index.json records it)";
  }
  bool storesReplicas() const override { return true; }
  bool prepareDir(const std::string &dir, const Program &program, bool overwrite,
                  std::string &error) const override {
    return checkOutputDir(dir, program, overwrite, error);
  }
  int removeStaleTemporaries(const std::string &dir, const Program &program,
                             int64_t rank) const override {
    return initrt::removeStaleTemporaries(dir, program, rank);
  }
  bool prepareRank(const std::string &dir, const Program &program, int64_t rank, bool overwrite,
                   std::string &error) const override {
    return checkOwnShard(dir, program, rank, overwrite, error);
  }
  ShardState rankState(const std::string &dir, const Program &program, int64_t rank,
                       std::vector<std::string> &checksums, std::string &reason,
                       const std::string *baseStamps, bool someBasesMissing) const override {
    return shardState(dir, program, rank, checksums, reason, baseStamps, someBasesMissing);
  }
  bool rankOutputExists(const std::string &dir, const Program &program,
                        int64_t rank) const override {
    struct stat existing;
    return ::lstat((dir + "/" + shardFileName(rank, program.mesh.size())).c_str(), &existing) == 0;
  }
  std::unique_ptr<RankWriter> openRank(const std::string &dir, const Program &program,
                                       int64_t rank, const std::vector<ShardTensor> &tensors,
                                       std::string &error,
                                       const std::string &baseStamps) const override {
    auto writer = std::make_unique<ShardFileWriter>();
    if (!writer->open(dir, program, rank, tensors, error, baseStamps))
      return nullptr;
    return writer;
  }
  bool finishJob(const std::string &dir, const Program &program,
                 const std::vector<RankReport> &reports, std::string &error) const override {
    return writeIndex(dir, program, reports, error);
  }
};

} // namespace

const CheckpointLayout &ranksLayout() {
  static const RanksLayout layout;
  return layout;
}

} // namespace initrt
