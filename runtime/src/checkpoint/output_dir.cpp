#include "checkpoint/output_dir.h"

#include "checkpoint/records.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/json_text.h"
#include "checkpoint/index.h"
#include "checkpoint/shard_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

using namespace records;
//===----------------------------------------------------------------------===//
// Output directory
//===----------------------------------------------------------------------===//

namespace {
std::string refusal(const std::string &dir, const std::string &reason, const Program &program) {
  return dir + " holds a checkpoint of another program (" + reason + ", this program is " +
         program.programId + "): pass --overwrite to replace it, or choose another --out";
}

bool removeForOverwrite(const std::string &path, std::string &error) {
  // Other ranks may be removing the same files at the same time.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    error = "cannot remove " + path + " (--overwrite): " + std::strerror(errno);
    return false;
  }
  return true;
}
} // namespace

bool checkOutputDir(const std::string &dir, const Program &program, bool overwrite,
                    std::string &error) {
  if (!makeDirectories(dir, error))
    return false;
  int64_t worldSize = program.mesh.size();
  std::vector<std::string> foreign;
  std::string firstReason;

  std::string indexPath = joinPath(dir, kIndexFile);
  if (::access(indexPath.c_str(), F_OK) == 0) {
    std::string text, readError, id, why;
    bool ours = false, damaged = false;
    if (readTextFile(indexPath, text, readError)) {
      Json json;
      damaged = !parseJsonText(text, json, why);
      if (!damaged && json.is_object() && json.contains("program_id") &&
          json["program_id"].is_string()) {
        id = json["program_id"].get<std::string>();
        ours = id == program.programId;
      }
    }
    // index.json is written whole (renamed into place), so one that does not parse was cut or
    // damaged after the fact: say so rather than call it another program's.
    if (damaged && !overwrite) {
      error = indexPath + " is malformed (" + why +
              "): pass --overwrite to write it again (complete shards are kept), or choose "
              "another --out";
      return false;
    }
    if (!ours) {
      foreign.push_back(kIndexFile);
      firstReason = "index.json " +
                    (id.empty() ? std::string("is not an initc index") : "has program id " + id);
    }
  }

  // Shard files of another mesh size are another program's by their names alone. Those of this
  // size are each checked by the rank that owns the name (checkOwnShard), so that no process
  // reads thousands of headers.
  std::vector<std::string> names;
  if (!listDirectory(dir, names, error)) {
    error += ": choose another --out";
    return false;
  }
  for (const std::string &name : names) {
    int64_t rank, world;
    if (!parseShardFileName(name, rank, world) || world == worldSize)
      continue;
    foreign.push_back(name);
    if (firstReason.empty())
      firstReason = name + " is from a run with " + std::to_string(world) + " ranks";
  }
  if (foreign.empty())
    return true;
  if (!overwrite) {
    error = refusal(dir, firstReason, program);
    return false;
  }
  for (const std::string &name : foreign)
    if (!removeForOverwrite(joinPath(dir, name), error))
      return false;
  return true;
}

bool checkOwnShard(const std::string &dir, const Program &program, int64_t rank, bool overwrite,
                   std::string &error) {
  const int64_t worldSize = program.mesh.size();
  std::string name = shardFileName(rank, worldSize);
  std::string path = joinPath(dir, name);
  // A symbolic link is followed (AtomicFile), so one to another file of this checkpoint would
  // have two ranks write one file, or a rank write the index.
  const std::string targetName = linkTargetInDir(dir, path);
  if (!targetName.empty()) {
    std::string whose;
    if (targetName == kIndexFile)
      whose = "the checkpoint's index";
    for (int64_t other = 0; whose.empty() && other < worldSize; ++other)
      if (other != rank && targetName == shardFileName(other, worldSize))
        whose = "rank " + std::to_string(other) + "'s shard";
    if (!whose.empty()) {
      error = path + " is a symbolic link to " + targetName + ", " + whose +
              ", so two writers would share one file: remove the link and run again";
      return false;
    }
  }
  // A FIFO or a device under the shard's name would be written in place (AtomicFile writes
  // those directly), or waited on: a checkpoint holds regular files only.
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    if (S_ISDIR(info.st_mode)) { // --overwrite removes files, never a directory
      error = path + " is a directory, not a shard file: remove it or choose another --out";
      return false;
    }
    if (!overwrite) {
      error = path + " is " + fileKindText(info.st_mode) +
              ", not a shard file: remove it, pass --overwrite to replace it, or choose another "
              "--out";
      return false;
    }
    return removeForOverwrite(path, error);
  }
  SafetensorsReader reader;
  std::string openError;
  // A shard of ours that is unreadable is simply incomplete: this rank rewrites it.
  if (!reader.open(joinPath(dir, name), openError))
    return true;
  const std::string *id = reader.metadataValue("initc.program_id");
  if (id && *id == program.programId)
    return true;
  if (!overwrite) {
    error = refusal(dir, name + (id ? " has program id " + *id : " is not an initc shard"),
                    program);
    return false;
  }
  return removeForOverwrite(reader.path(), error);
}

int removeStaleTemporaries(const std::string &dir, const Program &program, int64_t rank) {
  // Temporary names are "." + final name + ".tmp-" + pid (AtomicFile).
  int64_t worldSize = program.mesh.size();
  std::vector<std::string> prefixes;
  if (rank >= 0) {
    prefixes.push_back("." + shardFileName(rank, worldSize) + ".tmp-");
  } else {
    prefixes.push_back(".rank-");
    prefixes.push_back(std::string(".") + kIndexFile + ".tmp-");
  }
  // Only temporaries no writer holds: another process writing this rank (a second
  // `--rank K`, another job on the same directory) keeps its own.
  return removeAbandonedTemporaries(dir, prefixes);
}

} // namespace initrt
