// The SQLite helpers the run store's files share (see store_internal.h).
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "core/store/store_internal.h"

namespace pm::store_detail {

int busyTimeoutMs() {
  static const int ms = [] {
    const char* v = std::getenv("PIPEMARE_STORE_BUSY_TIMEOUT_S");
    if (!v || !*v) return 10000;
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(s >= 0.1 && s <= 3600)) return 10000;
    return static_cast<int>(s * 1000);
  }();
  return ms;
}


std::string heldMessage() {
  const int ms = busyTimeoutMs();
  char buf[96];
  std::snprintf(buf, sizeof buf, " (another process held the store for more than %g s)", ms / 1000.0);
  return buf;
}

bool isDamage(int rc) { return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB; }

std::string explain(std::string msg, int rc) {
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) msg += heldMessage();
  if (isDamage(rc)) msg = "the run store is damaged (" + msg + "); it was left as it is";
  return msg;
}

std::string describe(sqlite3* db, int rc) { return explain(db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), rc); }

void execSql(sqlite3* db, const std::string& place, const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    const std::string msg = explain(err ? err : sqlite3_errstr(rc), rc);
    sqlite3_free(err);
    throw StoreError(place, msg, isDamage(rc));
  }
}

void requireWritable(bool readOnly, const std::string& place) {
  // A usage error (exit 2): the command writes, and the file cannot be written (or a reader asked).
  if (readOnly) throw StoreError(place, "the run store is read-only here (permissions or file system), and this command writes to it", true);
}

TableInfo readTables(sqlite3* db, const std::string& place) {
  TableInfo info;
  Stmt q(db, place, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  while (q.step()) {
    std::string name = q.text(0);
    if (name == "schema_version") info.hasSchemaVersion = true;
    else if (name.rfind("sqlite_", 0) != 0) info.others.push_back(name);
  }
  return info;
}

int readVersion(sqlite3* db, const std::string& place) {
  Stmt q(db, place, "SELECT MAX(version) FROM schema_version");
  if (!q.step() || q.isNull(0)) return 0;
  return q.i32(0);
}

std::string notOurStoreMessage(const TableInfo& t) {
  std::string list;
  for (size_t i = 0; i < t.others.size() && i < 5; ++i) list += (i ? ", " : "") + t.others[i];
  if (t.others.size() > 5) list += ", ...";
  return "not a PipeMare run store (it has tables [" + list + "] but no schema_version table)";
}

std::string newerVersionMessage(int version) {
  return "the store has schema version " + std::to_string(version) + ", newer than version " +
         std::to_string(kStoreSchemaVersion) + " which this build of PipeMare supports; use a newer PipeMare";
}

std::string headerProblem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  // A device, pipe or socket (--db /dev/null): SQLite would put its journal beside it
  // (/dev/null-journal) and fail later; a store is a regular file.
  if (!S_ISREG(st.st_mode)) return "it is a device, pipe or socket, not a regular file";
  // Every SQLite database is at least one page of 512 bytes or more. SQLite itself reads a shorter
  // file as an empty database (and would then write a new one over it); a longer one it judges
  // itself (SQLITE_NOTADB on the first statement).
  if (S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size < 512)
    return "it is " + std::to_string(st.st_size) + " bytes long, shorter than any SQLite database";
  return "";
}

}  // namespace pm::store_detail
