-- build.lua's download path against a local file:// release folder shaped as
-- `make release` writes one (mk/release.sh): agentd_<version>_<os>_<arch>.tar.gz
-- holding agentd_<version>_<os>_<arch>/agentd, and SHA256SUMS. A good archive
-- is installed into <root>/bin/ and found by the plugin first; a damaged one
-- (its SHA256 not the listed one) is refused and installs nothing; a release
-- without this platform says so. Run: nvim --headless -u NONE -l tests/install.lua
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.rtp:prepend(vim.fn.fnamemodify(here, ':h'))
local install = require('agentd.install')
local harness = dofile(here .. '/check.lua')
local check = harness.check
local function sh(cmd)
  local r = vim.system({ 'sh', '-c', cmd }, { text = true }):wait()
  assert(r.code == 0, cmd .. ': ' .. (r.stderr or ''))
  return r.stdout
end

local os_, arch = install.target()
local rel = vim.fn.tempname()
local name = ('agentd_0.0.1_%s_%s'):format(os_, arch)
vim.fn.mkdir(rel .. '/stage/' .. name, 'p')
-- A stand-in agentd: what is checked is that these exact bytes arrive.
vim.fn.writefile({ '#!/bin/sh', 'echo "agentd 0.0.1 (fake release)"' }, rel .. '/stage/' .. name .. '/agentd')
vim.fn.writefile({ 'readme' }, rel .. '/stage/' .. name .. '/README.md')
sh(('cd %s/stage && chmod 755 %s/agentd && tar -czf ../%s.tar.gz %s'):format(rel, name, name, name))
-- Another platform's archive in the same folder, which must not be picked.
sh(('cd %s && cp %s.tar.gz agentd_0.0.1_plan9_mips.tar.gz'):format(rel, name))
sh(('cd %s && sha256sum *.tar.gz > SHA256SUMS'):format(rel))

local root = vim.fn.tempname()
vim.fn.mkdir(root, 'p')
local ok, res = pcall(install.fetch, root, 'file://' .. rel)
check('fetch installs the archive for this platform', ok and res == install.binary(root), res)
local got = ok and vim.fn.readfile(res) or {}
check('the installed binary is the archive\'s, executable', got[2] == 'echo "agentd 0.0.1 (fake release)"' and vim.fn.executable(res) == 1, vim.inspect(got))

-- A damaged archive: SHA256SUMS no longer matches.
local root2 = vim.fn.tempname()
vim.fn.mkdir(root2, 'p')
sh(('cd %s && printf x >> %s.tar.gz'):format(rel, name))
local ok2, err2 = pcall(install.fetch, root2, 'file://' .. rel)
check('a damaged archive is refused, naming the hashes', not ok2 and tostring(err2):find('but SHA256SUMS says', 1, true) ~= nil, err2)
check('nothing is installed from a damaged archive', vim.fn.filereadable(install.binary(root2)) == 0)

-- A release without this platform.
local rel3 = vim.fn.tempname()
vim.fn.mkdir(rel3, 'p')
sh(('cd %s && cp %s/agentd_0.0.1_plan9_mips.tar.gz . && sha256sum *.tar.gz > SHA256SUMS'):format(rel3, rel))
local ok3, err3 = pcall(install.fetch, vim.fn.tempname(), 'file://' .. rel3)
check('a release without this platform says so', not ok3 and tostring(err3):find('has no archive for ' .. os_ .. '/' .. arch, 1, true) ~= nil, err3)

-- build() without Go on PATH takes the download path.
local root4 = vim.fn.tempname()
vim.fn.mkdir(root4, 'p')
sh(('cd %s/stage && tar -czf ../%s.tar.gz %s && cd .. && sha256sum *.tar.gz > SHA256SUMS'):format(rel, name, name))
local path = vim.env.PATH
vim.env.PATH = '/usr/bin:/bin' -- no go here (checked below)
local nogo = vim.fn.executable('go') == 0
local ok4, res4 = pcall(install.build, root4, { base_url = 'file://' .. rel })
vim.env.PATH = path
check('build() downloads when Go is not on PATH', nogo and ok4 and vim.fn.executable(res4) == 1, res4)

-- lazy.nvim puts the repository's root on the runtimepath and sources its
-- plugin/ files: the root's plugin/agentd.lua must bring in editors/neovim.
local repo = install.repo_root()
local r = vim.system({ vim.env.NVIM_BIN or vim.v.progpath, '--headless', '-u', 'NONE', '-i', 'NONE', '-n', '--cmd', 'set rtp^=' .. repo,
  '-c', 'runtime! plugin/*.lua', '-c', "lua require('agentd').setup({}); io.stdout:write('cmd=' .. vim.fn.exists(':Agent'))", '-c', 'qa!' }, { text = true }):wait(30000)
check('the repository root works as a plugin without dir (:Agent exists)', (r.stdout or ''):find('cmd=2', 1, true) ~= nil, (r.stdout or '') .. (r.stderr or ''))

harness.done()
