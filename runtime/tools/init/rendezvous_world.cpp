#include "rendezvous_world.h"

#include "options.h"

#include "initrt/base/files.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace initrt::init {
namespace {

using Clock = std::chrono::steady_clock;

// Every frame: kFrameMagic, its kind, the payload's length, the payload.
constexpr uint32_t kFrameMagic = 0x696e6974; // "init"
enum FrameKind : uint32_t { kHello = 1, kWelcome = 2, kData = 3, kAbort = 4, kReject = 5 };
// No collective of prog/init sends more (ids, paths, a few words per parameter).
constexpr uint64_t kMaxFrame = uint64_t(1) << 32;

struct FrameHeader {
  uint32_t magic;
  uint32_t kind;
  uint64_t length;
};

bool writeAll(int fd, const void *data, size_t bytes) {
  const char *at = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t sent = ::send(fd, at, bytes, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR)
      continue;
    if (sent <= 0)
      return false;
    at += sent;
    bytes -= size_t(sent);
  }
  return true;
}

bool readAll(int fd, void *data, size_t bytes) {
  char *at = static_cast<char *>(data);
  while (bytes > 0) {
    ssize_t got = ::recv(fd, at, bytes, 0);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    at += got;
    bytes -= size_t(got);
  }
  return true;
}

bool sendFrame(int fd, uint32_t kind, const std::string &payload) {
  FrameHeader header{kFrameMagic, kind, payload.size()};
  return writeAll(fd, &header, sizeof header) && writeAll(fd, payload.data(), payload.size());
}

bool recvFrame(int fd, uint32_t &kind, std::string &payload) {
  FrameHeader header;
  if (!readAll(fd, &header, sizeof header) || header.magic != kFrameMagic ||
      header.length > kMaxFrame)
    return false;
  kind = header.kind;
  payload.resize(size_t(header.length));
  return readAll(fd, payload.data(), payload.size());
}

// Waits until `fd` is readable or `deadline` passes.
bool readableBy(int fd, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return false;
    pollfd entry{fd, POLLIN, 0};
    int ready = ::poll(&entry, 1, int(std::min<long long>(left.count(), INT_MAX)));
    if (ready > 0)
      return true;
    if (ready < 0 && errno != EINTR)
      return false;
  }
}

// A peer's host that stops answering (power, network) is found in about 90 s; one that ends
// its process closes the connection at once.
void keepAlive(int fd) {
  int on = 1, idle = 30, interval = 10, count = 6;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0)
    return "?";
  return name;
}

// Ranks of one kernel share its CPUs (cpuShare), whatever their network namespace calls it.
std::string kernelId() {
  std::string id, why;
  if (readRegularFile("/proc/sys/kernel/random/boot_id", 64, id, why) != ReadFileStatus::Ok)
    return hostName();
  while (!id.empty() && id.back() == '\n')
    id.pop_back();
  return id;
}

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

int timeoutSeconds(std::string &error) {
  const char *text = std::getenv("INITC_RENDEZVOUS_TIMEOUT");
  if (!text)
    return 300;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < 1 || value > 86400) {
    error = std::string("INITC_RENDEZVOUS_TIMEOUT=") + text +
            " is not a number of seconds (1 to 86400)";
    return -1;
  }
  return int(value);
}

std::string endpoint(const Launch &launch) {
  return launch.host + ":" + std::to_string(launch.port);
}

// Listens on every address of this host at the launch's port.
int listenAt(const Launch &launch, std::string &error) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6)
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("rank 0 cannot open a socket: ") + std::strerror(errno);
    return -1;
  }
  int on = 1, off = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  int bound;
  if (v6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(uint16_t(launch.port));
    bound = ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address);
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(uint16_t(launch.port));
    bound = ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address);
  }
  if (bound != 0 || ::listen(fd, 1024) != 0) {
    error = "rank 0 cannot listen on port " + std::to_string(launch.port) + " (" +
            launch.portFrom + ") of " + hostName() + ": " + std::strerror(errno) +
            ": another process holds it (a second rank 0, or another program); set "
            "INITC_RENDEZVOUS=HOST:PORT to rank 0's host and a free port there";
    ::close(fd);
    return -1;
  }
  return fd;
}

// One attempt to connect to rank 0, at most `limit` long. -1, with `why`, if it failed.
int connectOnce(const Launch &launch, std::chrono::milliseconds limit, std::string &why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  std::string port = std::to_string(launch.port);
  if (int failed = ::getaddrinfo(launch.host.c_str(), port.c_str(), &hints, &found)) {
    why = "cannot resolve " + launch.host + ": " + ::gai_strerror(failed);
    return -1;
  }
  int fd = -1;
  for (addrinfo *at = found; at && fd < 0; at = at->ai_next) {
    fd = ::socket(at->ai_family, at->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, at->ai_protocol);
    if (fd < 0)
      continue;
    int done = ::connect(fd, at->ai_addr, at->ai_addrlen);
    if (done != 0 && errno == EINPROGRESS) {
      pollfd entry{fd, POLLOUT, 0};
      int error = ETIMEDOUT;
      socklen_t length = sizeof error;
      if (::poll(&entry, 1, int(limit.count())) == 1)
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      errno = error;
      done = error == 0 ? 0 : -1;
    }
    if (done != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd >= 0)
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// The exit code an abort frame carries.
int abortCode(const std::string &payload) {
  int code = std::atoi(payload.c_str());
  return code > 0 && code < 128 ? code : kExitFailure;
}

void closeAll(std::vector<int> &sockets) {
  for (int &fd : sockets)
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
}

// Rank 0 stopping the job: every rank gets an abort frame with `code`. Closing a socket with
// unread bytes would reset it and could drop that frame, so rank 0 reads what the ranks still
// send until they close (each does on the frame), for at most a few seconds.
void abortAll(std::vector<int> &sockets, int code) {
  std::vector<pollfd> open;
  for (int fd : sockets)
    if (fd >= 0 && sendFrame(fd, kAbort, std::to_string(code)) && ::shutdown(fd, SHUT_WR) == 0)
      open.push_back({fd, POLLIN, 0});
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(3);
  char sink[4096];
  while (!open.empty() && Clock::now() < deadline) {
    if (::poll(open.data(), open.size(), 100) < 0 && errno != EINTR)
      break;
    for (size_t i = open.size(); i-- > 0;)
      if (open[i].revents != 0 && ::recv(open[i].fd, sink, sizeof sink, 0) <= 0)
        open.erase(open.begin() + long(i));
  }
  closeAll(sockets);
}

} // namespace

std::unique_ptr<RendezvousWorld> RendezvousWorld::join(const Launch &launch, std::string &error,
                                                       int &code) {
  code = kExitFailure;
  const int rank = int(launch.self.rank), size = int(launch.self.size);
  std::unique_ptr<RendezvousWorld> world(new RendezvousWorld(rank, size));
  world->sockets.assign(size_t(rank == 0 ? size : 1), -1);
  world->hosts.assign(size_t(size), "");
  world->hosts[size_t(rank)] = hostName();
  if (size == 1)
    return world;
  const int timeout = timeoutSeconds(error);
  if (timeout < 0) {
    code = kExitUsage;
    return nullptr;
  }
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(timeout);
  const std::string waited = std::to_string(timeout) + " s";

  if (rank != 0) {
    std::ostringstream hello;
    hello << rank << "\n" << size << "\n" << launch.jobKey << "\n" << hostName() << "\n";
    std::string why = "no answer";
    while (Clock::now() < deadline) {
      int fd = connectOnce(launch, std::chrono::milliseconds(2000), why);
      uint32_t kind = 0;
      std::string reply;
      // Rank 0 answers when every rank has arrived, or says why not when its own wait ends:
      // this rank waits for that a little longer than rank 0 does.
      if (fd >= 0 && sendFrame(fd, kHello, hello.str()) &&
          readableBy(fd, deadline + std::chrono::seconds(10)) &&
          recvFrame(fd, kind, reply)) {
        if (kind == kWelcome) {
          keepAlive(fd);
          world->sockets[0] = fd;
          world->hosts[0] = reply;
          return world;
        }
        ::close(fd);
        if (kind == kAbort) { // rank 0 said why, for the whole job
          error.clear();
          code = abortCode(reply);
          return nullptr;
        }
        error = kind == kReject ? reply
                                : "rank 0 at " + endpoint(launch) + " answered nonsense: is the "
                                  "port (" + launch.portFrom + ") another program's?";
        return nullptr;
      }
      if (fd >= 0) {
        why = "the connection closed before rank 0 answered";
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    error = "rank " + std::to_string(rank) + " of " + std::to_string(size) + " (" + hostName() +
            ", started by " + launch.launcher + ") could not reach rank 0 at " +
            endpoint(launch) + " (port from " + launch.portFrom + ") within " + waited + " (" +
            why + "): is rank 0 running on " + launch.host +
            ", and can this host reach it? Set INITC_RENDEZVOUS_TIMEOUT to wait longer, "
            "INITC_RENDEZVOUS=HOST:PORT to meet elsewhere";
    return nullptr;
  }

  int listener = listenAt(launch, error);
  if (listener < 0)
    return nullptr;
  int arrived = 1;
  // Stops the ranks that arrived with `why` said here once; `exitCode` for all.
  auto refuse = [&](const std::string &why, int exitCode) {
    ::close(listener);
    abortAll(world->sockets, exitCode);
    error = why;
    code = exitCode;
    return nullptr;
  };
  while (arrived < size) {
    if (!readableBy(listener, deadline)) {
      std::string missing;
      int shown = 0;
      for (int r = 1; r < size; ++r)
        if (world->sockets[size_t(r)] < 0 && shown++ < 8)
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      if (size - arrived > 8)
        missing += ", ...";
      return refuse("rank 0 (" + hostName() + ", started by " + launch.launcher + ") waited " +
                        waited + " at port " + std::to_string(launch.port) + " for " +
                        std::to_string(size - arrived) + " of the " + std::to_string(size) +
                        " ranks (" + missing +
                        "): they were not started, or cannot reach " + endpoint(launch) +
                        ". Set INITC_RENDEZVOUS_TIMEOUT to wait longer",
                    kExitFailure);
    }
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    uint32_t kind = 0;
    std::string payload;
    // A stranger that connects and says nothing does not hold the job up for long.
    Clock::time_point helloBy = std::min(deadline, Clock::now() + std::chrono::seconds(10));
    if (!readableBy(fd, helloBy) || !recvFrame(fd, kind, payload) || kind != kHello) {
      ::close(fd);
      continue;
    }
    std::vector<std::string> fields = splitLines(payload);
    if (fields.size() != 4) {
      ::close(fd);
      continue;
    }
    if (fields[2] != launch.jobKey) {
      sendFrame(fd, kReject,
                "the process at " + endpoint(launch) + " is rank 0 of another job (" +
                    launch.launcher + " job '" + launch.jobKey + "', this rank's is '" +
                    fields[2] + "'): set INITC_RENDEZVOUS=HOST:PORT to a port of this job's own");
      ::close(fd);
      continue;
    }
    const int theirRank = std::atoi(fields[0].c_str());
    const std::string &theirHost = fields[3];
    if (fields[1] != std::to_string(size)) {
      world->sockets.push_back(fd); // told with the others
      return refuse("ranks disagree on the size of the job: rank " + fields[0] + " (" +
                        theirHost + ") was started as one of " + fields[1] +
                        " ranks, rank 0 (" + hostName() + ") as one of " +
                        std::to_string(size) + ": start every rank of one job with the same " +
                        launch.self.variables,
                    kExitUsage);
    }
    if (theirRank <= 0 || theirRank >= size) { // each rank checks its own: not one of ours
      ::close(fd);
      continue;
    }
    if (world->sockets[size_t(theirRank)] >= 0) {
      const std::string &first = world->hosts[size_t(theirRank)];
      world->sockets.push_back(fd);
      return refuse("two processes were started as rank " + fields[0] + " (on " + first +
                        " and " + theirHost + "): give each process of the job its own " +
                        launch.self.variables.substr(0, launch.self.variables.find('/')),
                    kExitUsage);
    }
    keepAlive(fd);
    world->sockets[size_t(theirRank)] = fd;
    world->hosts[size_t(theirRank)] = theirHost;
    ++arrived;
  }
  ::close(listener);
  for (int r = 1; r < size; ++r)
    if (!sendFrame(world->sockets[size_t(r)], kWelcome, world->hosts[0]))
      world->peerLost(r, "its connection closed as the job started");
  return world;
}

RendezvousWorld::~RendezvousWorld() { closeAll(sockets); }

void RendezvousWorld::peerLost(int peer, const std::string &why) {
  // Rank 0 may have stopped the job (and said why) before this rank's write failed.
  uint32_t kind = 0;
  std::string payload;
  if (myRank != 0 && readableBy(sockets[0], Clock::now() + std::chrono::milliseconds(500)) &&
      recvFrame(sockets[0], kind, payload) && kind == kAbort) {
    closeAll(sockets);
    std::fflush(nullptr);
    std::_Exit(abortCode(payload));
  }
  std::fprintf(stderr,
               "%s: error (rank %d): rank %d (host %s) ended before the job did (%s): it crashed, "
               "was killed, or stopped on an error it reported; the job stops\n",
               programName.c_str(), myRank, peer, hosts[size_t(peer)].c_str(), why.c_str());
  if (myRank == 0)
    abortAll(sockets, kExitFailure);
  closeAll(sockets);
  std::fflush(nullptr);
  std::_Exit(kExitFailure);
}

std::vector<std::string> RendezvousWorld::gather(const std::string &bytes) {
  if (worldSize == 1)
    return {bytes};
  if (myRank != 0) {
    if (!sendFrame(sockets[0], kData, bytes))
      peerLost(0, "its connection closed");
    return {};
  }
  std::vector<std::string> all(static_cast<size_t>(worldSize));
  all[0] = bytes;
  // Whichever rank arrives first is read first, so that one that died is named at once even
  // while others still compute.
  std::vector<pollfd> waiting;
  std::vector<int> ranks;
  for (int r = 1; r < worldSize; ++r) {
    waiting.push_back({sockets[size_t(r)], POLLIN, 0});
    ranks.push_back(r);
  }
  while (!waiting.empty()) {
    int ready = ::poll(waiting.data(), waiting.size(), -1);
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      peerLost(ranks[0], std::string("poll failed: ") + std::strerror(errno));
    }
    for (size_t i = waiting.size(); i-- > 0;) {
      if (waiting[i].revents == 0)
        continue;
      uint32_t kind = 0;
      std::string payload;
      if (!recvFrame(waiting[i].fd, kind, payload) || kind != kData)
        peerLost(ranks[i], "its connection closed");
      all[size_t(ranks[i])] = std::move(payload);
      waiting.erase(waiting.begin() + long(i));
      ranks.erase(ranks.begin() + long(i));
    }
  }
  return all;
}

std::string RendezvousWorld::spread(const std::string &bytes) {
  if (worldSize == 1)
    return bytes;
  if (myRank == 0) {
    for (int r = 1; r < worldSize; ++r)
      if (!sendFrame(sockets[size_t(r)], kData, bytes))
        peerLost(r, "its connection closed");
    return bytes;
  }
  uint32_t kind = 0;
  std::string payload;
  if (!recvFrame(sockets[0], kind, payload))
    peerLost(0, "its connection closed");
  if (kind == kAbort) { // rank 0 has said why
    closeAll(sockets);
    std::fflush(nullptr);
    std::_Exit(abortCode(payload));
  }
  return payload;
}

int RendezvousWorld::reduceInt(int value, bool maximum) {
  std::vector<std::string> all = gather(std::string(reinterpret_cast<char *>(&value), sizeof value));
  int result = value;
  for (const std::string &bytes : all) {
    int theirs;
    std::memcpy(&theirs, bytes.data(), sizeof theirs);
    result = maximum ? std::max(result, theirs) : std::min(result, theirs);
  }
  std::string reduced = spread(std::string(reinterpret_cast<char *>(&result), sizeof result));
  std::memcpy(&result, reduced.data(), sizeof result);
  return result;
}

int RendezvousWorld::minInt(int value) { return reduceInt(value, false); }

int RendezvousWorld::maxInt(int value) { return reduceInt(value, true); }

template <typename T>
static std::vector<T> gatherValues(std::vector<std::string> all, size_t count) {
  std::vector<T> values(all.size() * count);
  for (size_t r = 0; r < all.size(); ++r)
    std::memcpy(values.data() + r * count, all[r].data(), std::min(all[r].size(), count * sizeof(T)));
  return values;
}

std::vector<uint64_t> RendezvousWorld::gatherToRoot(const std::vector<uint64_t> &words) {
  return gatherValues<uint64_t>(
      gather(std::string(reinterpret_cast<const char *>(words.data()), words.size() * 8)),
      words.size());
}

std::vector<double> RendezvousWorld::gatherToRoot(const std::vector<double> &values) {
  return gatherValues<double>(
      gather(std::string(reinterpret_cast<const char *>(values.data()), values.size() * 8)),
      values.size());
}

void RendezvousWorld::broadcast(std::string &text) { text = spread(text); }

void RendezvousWorld::abortJob(int code) {
  if (myRank == 0)
    abortAll(sockets, code);
  closeAll(sockets);
  std::fflush(nullptr);
  std::_Exit(code);
}

CpuShare RendezvousWorld::cpuShare() {
  // Every rank's kernel and CPU mask; those of this rank's kernel divide its CPUs.
  cpu_set_t mine = allowedCpus();
  std::string entry = kernelId();
  entry.resize(64, '\0');
  entry.append(reinterpret_cast<const char *>(&mine), sizeof mine);
  std::vector<std::string> all = gather(entry);
  std::string joined;
  for (const std::string &bytes : all)
    joined += bytes;
  joined = spread(joined);
  std::vector<cpu_set_t> masks;
  size_t self = 0;
  for (int r = 0; r < worldSize; ++r) {
    const char *at = joined.data() + size_t(r) * entry.size();
    if (std::memcmp(at, entry.data(), 64) != 0)
      continue;
    if (r == myRank)
      self = masks.size();
    cpu_set_t mask;
    std::memcpy(&mask, at + 64, sizeof mask);
    masks.push_back(mask);
  }
  return shareCpus(masks, self);
}

} // namespace initrt::init
