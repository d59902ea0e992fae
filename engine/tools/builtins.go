package tools

// builtins lists every built-in tool; each lives in its own file.
func builtins() []Tool {
	return []Tool{
		newReadFile(),
		newListDir(),
		newSearchFiles(),
		newSearchCode(),
		newWriteFile(),
		newEditFile(),
		newApplyPatch(),
		newJSONPatch(),
		newMoveFile(),
		newDeleteFile(),
		newRunCommand(),
		newGit(),
		newAskUser(),
	}
}
