-- Inline review: change sets drawn with extmarks in the real buffer, per
-- hunk accept/reject, the quickfix list, and hunk navigation.
--
-- Positions: a hunk is drawn where the server says it is, then anchored by
-- an extmark so it follows the user's typing until the server's next
-- agentd/changes/didChange (the truth) redraws it.
--
-- This module is the review's public face (the rest of the plugin, the
-- tests and :help agentd-api use it); the work is in its rooms:
--   store.lua    the change sets, anchors and counts (state)
--   hunk.lua     one hunk drawn: highlights, virtual lines, its anchor
--   draw.lua     which hunks a buffer shows, drawn now or when shown
--   files.lua    whole-file units: creations, deletions, moves, binaries
--   keys.lua     the buffer-local review keys
--   decide.lua   accept, reject, re-propose (agentd/changes/resolve ...)
--   sync.lua     the plugin's sets kept as the server's
--   nav.lua      the quickfix list, ]h and [h
--   preview.lua  :Agent preview's float
local config = require('agentd.config')
local S = require('agentd.review.store')
local files = require('agentd.review.files')
local keys = require('agentd.review.keys')
local draw = require('agentd.review.draw')
local nav = require('agentd.review.nav')
local sync = require('agentd.review.sync')
local decide = require('agentd.review.decide')
local preview = require('agentd.review.preview')

local M = {}

M.ns, M.ns_anchor = S.ns, S.ns_anchor
M.sets = S.sets -- [changeId] = ChangeSet (with texts)
M.order = S.order -- change ids, oldest first
M.setup_highlights = config.highlights

-- What the wire says: units and their counts.
M.units, M.file_counts, M.set_counts, M.open_units = S.units, S.file_counts, S.set_counts, S.open_units
M.pending_count, M.reason_to_model, M.hunk_start = S.pending_count, S.reason_to_model, S.hunk_start
M.is_whole, M.proposed_lines = files.is_whole, files.proposed_lines

-- Drawing and keys.
M.draw, M.on_win_enter, M.hunks = draw.draw, draw.on_win_enter, draw.hunks
M.review_maps, M.set_keymaps, M.on_enter = keys.review_maps, keys.set_keymaps, keys.on_enter

-- The server's view.
M.put, M.proposed, M.fetch, M.on_did_change = sync.put, sync.proposed, sync.fetch, sync.on_did_change
M.reload_from_disk, M.after_agent_edit, M.clear_root, M.forget = sync.reload_from_disk, sync.after_agent_edit, sync.clear_root, sync.forget

-- Decisions.
M.accept, M.reject, M.repropose = decide.accept, decide.reject, decide.repropose

-- Finding and looking at the changes.
M.items, M.refresh_qf, M.review, M.jump = nav.items, nav.refresh_qf, nav.review, nav.jump
M.preview = preview.preview


return M
