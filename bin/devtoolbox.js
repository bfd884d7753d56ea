#!/usr/bin/env node
// The package's bin: runs the compiled entry point (npm run build writes dist/).
import '../dist/main.js';
