"""The Gradio page people use: the chat with cited answers, its sources (passage, marked PDF
page, Word section), feedback and the sidebar of stored conversations. The admin tab is
admin/'s; this page holds it.

    app.py     `build_app`: the Blocks page, and `App`, the one object whose handlers answer it
    chat.py    the chat tab's and the sidebar's handlers
    welcome.py the empty chat: what the library holds, example questions from it
    render.py  what the chat shows, as HTML with every outside text escaped
    marks.py   the cited words marked on a page image

It imports the ui hall and admin/ (the admin tab's layout and handlers). A new tab gets its
layout in app.py and its handlers in a module of its own here, mixed into `App`.
"""
