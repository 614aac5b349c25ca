#pragma once
// Where the workbench keeps its data: $PIPEMARE_DB, else $XDG_DATA_HOME/pipemare/runs.db,
// else ~/.local/share/pipemare/runs.db. Dataset default locations live here too.
#include <string>

namespace pm {

std::string dataHomeDir();                 // $XDG_DATA_HOME/pipemare or ~/.local/share/pipemare
std::string defaultDatabasePath();         // honours PIPEMARE_DB
std::string defaultFashionMnistDir();      // /usr/share/datasets/fashion-mnist (Debian package)
std::string defaultTextCorpusPath();       // /usr/share/games/fortunes (Debian package 'fortunes')
// Makes the folder of `filePath` (mode 0700) when it is missing and its own parent exists: one level
// only, so that a mistyped path is refused instead of growing a tree of folders. The workbench's
// data folder (dataHomeDir) is the exception: it is made with all its missing levels. Otherwise
// throws StoreError (a usage error, exit 2) at `place` (default: the file's path), naming the first
// missing folder, a parent that is not a folder, or why the folder cannot be made.
void ensureParentDirectory(const std::string& filePath, const std::string& place = "");
bool fileExists(const std::string& path);
// Files the workbench creates (stores, exports, checkpoints) follow the user's umask but are never
// world-writable: removes the others-write bit of a file this user owns (no-op otherwise).
void dropWorldWritable(const std::string& path);
bool isDirectory(const std::string& path);

// PipeMare's read-only data (the experiment presets in experiments/), defined in data_dir.cpp:
// - an installed program: <prefix>/share/pipemare, found relative to the executable (bin/../share),
//   so that an installation moved elsewhere (cmake --install --prefix DIR, a DESTDIR staging folder,
//   the .deb's /usr) finds its own data;
// - a program run from the build tree (bin/, tests/, ...): the source checkout it was built from;
// - otherwise the data folder fixed at configure time (PIPEMARE_DATA_DIR, e.g. /usr/local/share/pipemare).
std::string pipemareDataDir();
std::string presetDirectory();  // pipemareDataDir() + "/experiments"
// An experiment argument of the command line: a path that exists is returned as given; otherwise a
// relative one that names a preset, with or without ".json" ("quickstart", "study/resnet20-t1"),
// is that preset's path; anything else is returned as given (the loader then names what is missing).
std::string resolveExperimentArgument(const std::string& argument);

}  // namespace pm
