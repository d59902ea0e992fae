-- Installing agentd for the plugin (the repository's build.lua calls build()
-- when lazy.nvim installs or updates it): with Go on PATH, `go build` into
-- <repo>/bin/; otherwise the release archive for this OS and CPU, from a
-- base URL (configurable: opts.base_url, else $AGENTD_RELEASE_URL, else the
-- project's latest release), checked against that release's SHA256SUMS.
-- Archives are named as `make release` names them (mk/release.sh):
-- agentd_<version>_<os>_<arch>.tar.gz, .zip for Windows.
local M = {}

M.DEFAULT_BASE_URL = 'https://github.com/agentd/agentd/releases/latest/download'

local is_windows = vim.fn.has('win32') == 1

--- os and arch as Go (and the release's archive names) spell them.
function M.target()
  local u = vim.uv.os_uname()
  local os_ = ({ Linux = 'linux', Darwin = 'darwin', Windows_NT = 'windows' })[u.sysname] or u.sysname:lower()
  local m = u.machine:lower()
  local arch = ({ x86_64 = 'amd64', amd64 = 'amd64', aarch64 = 'arm64', arm64 = 'arm64' })[m] or m
  return os_, arch
end

--- The binary build() puts in the repository: <root>/bin/agentd[.exe].
function M.binary(root)
  return root .. '/bin/' .. (is_windows and 'agentd.exe' or 'agentd')
end

--- The repository's root, from this file's place (editors/neovim/lua/agentd/).
function M.repo_root()
  local here = debug.getinfo(1, 'S').source:sub(2)
  return vim.fn.fnamemodify(here, ':p:h:h:h:h:h')
end

local function run(cmd, cwd)
  local r = vim.system(cmd, { cwd = cwd, text = true }):wait(600000)
  if r.code ~= 0 then
    error(('%s failed (exit %s): %s'):format(table.concat(cmd, ' '), tostring(r.code), vim.trim((r.stderr or '') .. (r.stdout or ''))), 0)
  end
  return r.stdout or ''
end

local function sha256_file(path)
  if vim.fn.executable('sha256sum') == 1 then
    return (run({ 'sha256sum', path }):match('^(%x+)'))
  elseif vim.fn.executable('shasum') == 1 then
    return (run({ 'shasum', '-a', '256', path }):match('^(%x+)'))
  elseif vim.fn.executable('certutil') == 1 then
    return (run({ 'certutil', '-hashfile', path, 'SHA256' }):match('\n(%x+)'))
  end
  error('no sha256sum, shasum or certutil to check the download with', 0)
end

--- What to do when the release cannot be downloaded (and Go is not there
--- to build from source), in plain words: what failed, and the three ways
--- on (:help agentd-install).
function M.download_failed(url, why)
  return table.concat({
    ('agentd: could not download the agentd binary from %s: %s'):format(url, why ~= '' and why or 'no reason given'),
    vim.fn.executable('go') == 1 and 'Any of these installs it:' or 'There is no Go on PATH to build it from source instead. Any of these installs it:',
    '  - set $AGENTD_RELEASE_URL to a reachable mirror of the release, or to a local folder holding its archive and SHA256SUMS '
      .. '(file:///path/to/folder), then run :Lazy build agentd',
    '  - install Go (https://go.dev/dl/), then run :Lazy build agentd (it builds agentd from the plugin\'s source)',
    "  - put an agentd binary on $PATH, or set cmd = { '/path/to/agentd', 'serve' } in require('agentd').setup()",
  }, '\n')
end

--- Where build() keeps the message of its last failure (read by
--- :checkhealth agentd; removed by a build that succeeds).
function M.failure_file()
  return vim.fn.stdpath('state') .. '/agentd-build-error.txt'
end

--- Downloads the release archive for this platform from base_url, checks
--- its SHA256 against base_url/SHA256SUMS, and unpacks agentd into
--- <root>/bin/. Returns the binary's path; raises an error naming the
--- archive and what to do otherwise (the old binary, if any, is kept).
function M.fetch(root, base_url)
  base_url = (base_url or vim.env.AGENTD_RELEASE_URL or M.DEFAULT_BASE_URL):gsub('/$', '')
  local os_, arch = M.target()
  local ext = os_ == 'windows' and 'zip' or 'tar.gz'
  local tmp = vim.fn.tempname()
  vim.fn.mkdir(tmp, 'p')
  local function get(name)
    local dst = tmp .. '/' .. name
    local url = base_url .. '/' .. name
    if url:match('^file://') and vim.fn.filereadable(url:sub(8)) == 0 then
      vim.fn.delete(tmp, 'rf')
      error(M.download_failed(url, 'no such file: ' .. url:sub(8)), 0)
    end
    local r = vim.system({ 'curl', '-fsSL', '--retry', '2', '-o', dst, url }, { text = true }):wait(600000)
    if r.code ~= 0 then
      vim.fn.delete(tmp, 'rf')
      error(M.download_failed(url, vim.trim((r.stderr or '') .. (r.stdout or '')) .. (' (curl exit %s)'):format(tostring(r.code))), 0)
    end
    return dst
  end
  local sums = table.concat(vim.fn.readfile(get('SHA256SUMS')), '\n')
  local want, name
  for line in (sums .. '\n'):gmatch('([^\n]*)\n') do
    local h, n = line:match('^(%x+)%s+%*?(%S+)$')
    if n and n:match('^agentd_.+_' .. os_ .. '_' .. arch .. '%.' .. ext:gsub('%.', '%%.') .. '$') then
      want, name = h:lower(), n
    end
  end
  if not name then
    error(('agentd: the release at %s has no archive for %s/%s (SHA256SUMS lists none); build agentd from source (make build) and set cmd'):format(base_url, os_, arch), 0)
  end
  local archive = get(name)
  local got = sha256_file(archive)
  if got ~= want then
    vim.fn.delete(tmp, 'rf')
    error(('agentd: %s from %s has SHA256 %s, but SHA256SUMS says %s: not installed (a damaged or tampered download; try again, or build from source)'):format(name, base_url, tostring(got), want), 0)
  end
  local out = tmp .. '/x'
  vim.fn.mkdir(out, 'p')
  run({ 'tar', '-xf', archive, '-C', out }) -- bsdtar on Windows and macOS reads .zip too
  local exe = is_windows and 'agentd.exe' or 'agentd'
  local found = vim.fs.find(exe, { path = out, type = 'file', limit = 1 })[1]
  if not found then
    error(('agentd: %s holds no %s'):format(name, exe), 0)
  end
  local dst = M.binary(root)
  vim.fn.mkdir(vim.fn.fnamemodify(dst, ':h'), 'p')
  local ok, err = vim.uv.fs_rename(found, dst)
  if not ok then
    -- another filesystem: copy
    local okc, cerr = vim.uv.fs_copyfile(found, dst)
    if not okc then
      error(('agentd: cannot put %s into place: %s'):format(dst, tostring(err or cerr)), 0)
    end
  end
  if not is_windows then
    vim.uv.fs_chmod(dst, tonumber('755', 8))
  end
  vim.fn.delete(tmp, 'rf')
  return dst
end

--- lazy.nvim's build step: go build when Go is there, else fetch(). A
--- failure is raised (lazy shows it) and kept for :checkhealth agentd.
function M.build(root, opts)
  local ok, res = pcall(M.build_now, root, opts)
  local file = M.failure_file()
  if ok then
    vim.fn.delete(file)
    return res
  end
  pcall(vim.fn.mkdir, vim.fs.dirname(file), 'p')
  pcall(vim.fn.writefile, vim.split(tostring(res), '\n'), file)
  error(res, 0)
end

function M.build_now(root, opts)
  opts = opts or {}
  root = root or M.repo_root()
  if not opts.fetch and vim.fn.executable('go') == 1 then
    vim.notify('agentd: building with Go (go build ./cmd/agentd)')
    run({ 'go', 'build', '-o', M.binary(root), './cmd/agentd' }, root)
    return M.binary(root)
  end
  vim.notify('agentd: no Go on PATH: downloading the release for ' .. table.concat({ M.target() }, '/'))
  return M.fetch(root, opts.base_url)
end

return M
