// expect: no_provider.d: error: no provider definition found (expected "provider NAME { probe ...; };")
/* nothing but comments */
