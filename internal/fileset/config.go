package fileset

import (
	"bufio"
	"bytes"
	"os/user"
	"path/filepath"
	"strings"
)

// configEntry is one "section.subsection.key = value" of a git config file,
// in file order. Section and key are lower-cased; the subsection keeps its
// case, as in git.
type configEntry struct {
	key   string // "core.excludesfile", "include.path", ...
	value string
}

// parseGitConfig reads the subset of git's config syntax that matters here:
// sections ([core], [section "sub"], [section.sub]), key = value lines,
// quoting, escapes, comments and line continuations. It is lenient: a line
// it does not understand is skipped, where git would refuse the file.
func parseGitConfig(data []byte) []configEntry {
	var out []configEntry
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	var pending string // a line continued with a trailing backslash
	for sc.Scan() {
		line := pending + sc.Text()
		pending = ""
		if strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") {
			pending = line[:len(line)-1]
			continue
		}
		s := strings.TrimSpace(line)
		if s == "" || s[0] == '#' || s[0] == ';' {
			continue
		}
		if s[0] == '[' {
			end := strings.LastIndexByte(s, ']')
			if end < 0 {
				continue
			}
			hdr := s[1:end]
			rest := strings.TrimSpace(s[end+1:])
			if i := strings.IndexByte(hdr, '"'); i >= 0 {
				name := strings.ToLower(strings.TrimSpace(hdr[:i]))
				sub := strings.TrimSuffix(hdr[i+1:], "\"")
				sub = strings.NewReplacer(`\\`, `\`, `\"`, `"`).Replace(sub)
				section = name + "." + sub
			} else if i := strings.IndexByte(hdr, '.'); i >= 0 {
				// Deprecated [section.sub] form: the subsection is lower-cased.
				section = strings.ToLower(hdr)
			} else {
				section = strings.ToLower(strings.TrimSpace(hdr))
			}
			// "[core] excludesfile = x" is allowed on one line.
			if rest == "" || rest[0] == '#' || rest[0] == ';' {
				continue
			}
			s = rest
		}
		name, value, hasValue := strings.Cut(s, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if !hasValue {
			value = "true"
		} else {
			value = unquoteConfigValue(value)
		}
		out = append(out, configEntry{key: section + "." + name, value: value})
	}
	return out
}

// unquoteConfigValue handles quotes, escapes, inline comments and trimming
// the way git's config parser does.
func unquoteConfigValue(v string) string {
	var b strings.Builder
	inQuote := false
	spaces := 0 // pending unquoted whitespace, dropped at the end
	v = strings.TrimLeft(v, " \t")
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case !inQuote && (c == ' ' || c == '\t'):
			spaces++
			continue
		case !inQuote && (c == '#' || c == ';'):
			return b.String()
		}
		for ; spaces > 0; spaces-- {
			b.WriteByte(' ')
		}
		switch c {
		case '"':
			inQuote = !inQuote
		case '\\':
			i++
			if i >= len(v) {
				return b.String()
			}
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				if b.Len() > 0 {
					s := b.String()
					b.Reset()
					b.WriteString(s[:len(s)-1])
				}
			default:
				b.WriteByte(v[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// expandUserPath expands a leading "~/" or "~user/" as git_config_pathname does.
func expandUserPath(p string, env envFunc) string {
	if !strings.HasPrefix(p, "~") {
		return p
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	var home string
	if name == "" {
		home, _ = env("HOME")
	} else if u, err := user.Lookup(name); err == nil {
		home = u.HomeDir
	}
	if home == "" {
		return p
	}
	return filepath.Join(home, rest)
}

// configFiles lists the config files git reads, lowest precedence first:
// system, global (XDG, then ~/.gitconfig, or GIT_CONFIG_GLOBAL alone) and,
// if there is a repository, its config.
func configFiles(commonDir string, env envFunc) []string {
	var files []string
	if v, _ := env("GIT_CONFIG_NOSYSTEM"); v == "" {
		if p, _ := env("GIT_CONFIG_SYSTEM"); p != "" {
			files = append(files, p)
		} else {
			files = append(files, "/etc/gitconfig")
		}
	}
	if p, ok := env("GIT_CONFIG_GLOBAL"); ok {
		if p != "" {
			files = append(files, expandUserPath(p, env))
		}
	} else {
		if x := xdgConfigHome(env); x != "" {
			files = append(files, filepath.Join(x, "git", "config"))
		}
		if h, _ := env("HOME"); h != "" {
			files = append(files, filepath.Join(h, ".gitconfig"))
		}
	}
	if commonDir != "" {
		files = append(files, filepath.Join(commonDir, "config"))
	}
	return files
}

// xdgConfigHome is $XDG_CONFIG_HOME, else ~/.config.
func xdgConfigHome(env envFunc) string {
	if x, _ := env("XDG_CONFIG_HOME"); x != "" {
		return x
	}
	if h, _ := env("HOME"); h != "" {
		return filepath.Join(h, ".config")
	}
	return ""
}

// envFunc looks up an environment variable (os.LookupEnv; tests substitute
// their own to run in parallel).
type envFunc func(string) (string, bool)
