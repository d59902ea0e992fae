// Test only (the typing figure of test/e2e/run.mjs). It draws on ui.txt what agentd's review
// draws on top.txt (the same text), from an extension that does nothing else: no review state,
// no handler of typing, no server. The CodeLens lines are agentd's own for top.txt, copied
// through VS Code's CodeLens command while top.txt is shown (agentd gives lenses to the lines
// around what an editor shows): the same lines and titles. The decorations are those agentd draws
// in `before` mode for each of those hunks (each replaces one line: the old line marked removed,
// the new one as ghost text after it), with the same decoration options. ui.txt against plain.txt
// is what this UI costs on each key in VS Code; top.txt and big.txt against ui.txt is what
// agentd's review adds to it.
const vscode = require('vscode');

const types = {
  removed: vscode.window.createTextEditorDecorationType({
    isWholeLine: true, backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'), overviewRulerLane: vscode.OverviewRulerLane.Left,
  }),
  ghostAdded: vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor('gitDecoration.addedResourceForeground'), fontStyle: 'italic', margin: '0 0 0 2em' },
  }),
};

exports.activate = (context) => {
  let copied; // copied once: agentd's lenses of top.txt as the first editor that showed it got them
  const isUi = (ed) => ed.document.uri.path.endsWith('/ui.txt');
  const draw = (ed) => {
    if (!copied || !isUi(ed)) return;
    const lines = [...new Set(copied.filter((l) => l.title === 'Accept').map((l) => l.range.start.line))];
    ed.setDecorations(types.removed, lines.map((n) => new vscode.Range(n, 0, n, 0)));
    ed.setDecorations(types.ghostAdded, lines.map((n) => {
      const text = ed.document.lineAt(n).text + ' changed';
      const md = new vscode.MarkdownString();
      md.appendMarkdown('**agentd proposes:**');
      md.appendCodeblock('+' + text, 'diff');
      return { range: new vscode.Range(n, Number.MAX_SAFE_INTEGER, n, Number.MAX_SAFE_INTEGER), hoverMessage: md, renderOptions: { after: { contentText: '+ ' + text.trim() } } };
    }));
  };
  const copy = async (editors) => {
    const top = editors.find((e) => e.document.uri.path.endsWith('/top.txt'));
    if (copied || !top) return;
    const theirs = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', top.document.uri, 100);
    if (copied || !theirs || theirs.length === 0) return;
    copied = theirs.map((l) => ({ range: l.range, title: l.command ? l.command.title : '' }));
  };
  context.subscriptions.push(vscode.window.onDidChangeVisibleTextEditors((eds) => { void copy(eds); eds.forEach(draw); }));
  void copy(vscode.window.visibleTextEditors);
  context.subscriptions.push(vscode.commands.registerCommand('lensControl.none', () => undefined));
  context.subscriptions.push(vscode.languages.registerCodeLensProvider({ pattern: '**/ui.txt' }, {
    provideCodeLenses() {
      // None yet: the test waits for them and fails if they never come.
      if (!copied) throw new Error('lens-control: top.txt has not been shown with its lenses yet');
      return copied.map((l) => new vscode.CodeLens(l.range, { title: l.title, command: 'lensControl.none' }));
    },
  }));
};
exports.deactivate = () => undefined;
