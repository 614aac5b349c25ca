#pragma once
// The files of one `pipemare export`, written all or none.
#include <string>
#include <vector>

namespace pm::cli {

// One file of an export: the option that asked for it as given ("--json out.json", "--csv DIR"),
// what the file is in messages, where it goes and what it holds.
struct ExportFile {
  std::string option, what, path, text;
};

// Writes every file or none: each text goes to "<path>.part" first, and only when all of them are
// written are they renamed into place, so that an unwritable --json leaves no CSV files of a
// half-done export behind and a failed write never truncates an earlier export. A target that
// exists and is not a regular file (a link, /dev/stdout, a FIFO) is written through instead, after
// every .part file is. A failure is one StoreError at the file's option (a usage error, exit 2)
// that says what is exported: nothing, or the files already in place.
void writeAllOrNothing(const std::vector<ExportFile>& files);

}  // namespace pm::cli
