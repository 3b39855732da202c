// expect: garbage.d:3: error: expected "provider", "typedef" or a comment, found "hello"

hello world
