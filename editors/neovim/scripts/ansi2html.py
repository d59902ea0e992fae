#!/usr/bin/env python3
"""Turns a `tmux capture-pane -e` capture (SGR escapes) into an HTML page."""
import html, re, sys

BASE = ["#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
        "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff"]

def c256(n):
    if n < 16:
        return BASE[n]
    if n < 232:
        n -= 16
        v = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (v[n // 36], v[(n // 6) % 6], v[n % 6])
    g = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (g, g, g)

FG, BG = "#e0e2ea", "#14161b"  # Neovim 0.10's default dark scheme

def main():
    text = sys.stdin.read()
    out, st = [], {"fg": None, "bg": None, "bold": False, "ul": False, "rev": False}
    def span(s):
        fg, bg = st["fg"] or FG, st["bg"] or BG
        if st["rev"]:
            fg, bg = bg, fg
        style = "color:%s;background:%s" % (fg, bg)
        if st["bold"]:
            style += ";font-weight:bold"
        if st["ul"]:
            style += ";text-decoration:underline"
        return '<span style="%s">%s</span>' % (style, html.escape(s))
    for part in re.split(r"(\x1b\[[0-9;:]*m)", text):
        m = re.match(r"\x1b\[([0-9;:]*)m", part)
        if not m:
            if part:
                out.append(span(part))
            continue
        codes = [int(x) if x else 0 for x in re.split(r"[;:]", m.group(1))] or [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                st.update(fg=None, bg=None, bold=False, ul=False, rev=False)
            elif c == 1:
                st["bold"] = True
            elif c == 4:
                st["ul"] = True
            elif c == 7:
                st["rev"] = True
            elif c == 22:
                st["bold"] = False
            elif c == 24:
                st["ul"] = False
            elif c == 27:
                st["rev"] = False
            elif 30 <= c <= 37:
                st["fg"] = BASE[c - 30]
            elif 90 <= c <= 97:
                st["fg"] = BASE[c - 90 + 8]
            elif 40 <= c <= 47:
                st["bg"] = BASE[c - 40]
            elif 100 <= c <= 107:
                st["bg"] = BASE[c - 100 + 8]
            elif c == 39:
                st["fg"] = None
            elif c == 49:
                st["bg"] = None
            elif c in (38, 48) and i + 1 < len(codes):
                key = "fg" if c == 38 else "bg"
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    st[key] = c256(codes[i + 2]); i += 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    st[key] = "#%02x%02x%02x" % tuple(codes[i + 2:i + 5]); i += 4
            i += 1
    body = "".join(out)
    print('<!doctype html><html><body style="margin:0;background:%s">'
          '<pre style="margin:0;padding:6px;font:14px/1.25 \'DejaVu Sans Mono\',monospace;color:%s">%s</pre>'
          '</body></html>' % (BG, FG, body))

main()
