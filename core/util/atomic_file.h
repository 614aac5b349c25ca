#pragma once
// Files written whole or not at all. The bytes go to a temporary file created exclusively beside the
// target (O_CREAT | O_EXCL | O_NOFOLLOW, a random name: a planted file or link there is never
// followed), every write is checked, the file is synced and then renamed over the target. On any
// failure (a full disk, an I/O error) the temporary is removed, the target is left as it was, and
// FileError names the target and the reason ("No space left on device").
#include <sys/types.h>

#include <string>
#include <string_view>

namespace pm {

void writeFileAtomically(const std::string& path, std::string_view bytes, mode_t mode = 0600);

// The first half of the above, for writers that put several files in place together: `bytes` in a
// temporary file created exclusively beside `path`, with `mode` whatever the umask, synced. Returns
// its name; the caller renames it over `path` (or removes it). Throws FileError as above.
std::string writeTemporaryBeside(const std::string& path, std::string_view bytes, mode_t mode);

}  // namespace pm
