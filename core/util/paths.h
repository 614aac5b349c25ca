#pragma once
// Where the workbench keeps its data: $PIPEMARE_DB, else $XDG_DATA_HOME/pipemare/runs.db,
// else ~/.local/share/pipemare/runs.db. Dataset default locations live here too.
#include <string>

namespace pm {

std::string dataHomeDir();                 // $XDG_DATA_HOME/pipemare or ~/.local/share/pipemare
std::string defaultDatabasePath();         // honours PIPEMARE_DB
std::string defaultFashionMnistDir();      // /usr/share/datasets/fashion-mnist (Debian package)
std::string defaultTextCorpusPath();       // /usr/share/games/fortunes (Debian package 'fortunes')
void ensureParentDirectory(const std::string& filePath);  // mkdir -p of the parent, mode 0700 for new dirs
bool fileExists(const std::string& path);
// Files the workbench creates (stores, exports, checkpoints) follow the user's umask but are never
// world-writable: removes the others-write bit of a file this user owns (no-op otherwise).
void dropWorldWritable(const std::string& path);
bool isDirectory(const std::string& path);

}  // namespace pm
