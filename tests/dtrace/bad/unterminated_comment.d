// expect: unterminated_comment.d:3: error: unterminated comment ("/*" without "*/")
provider p { probe x(); };
/* never closed
