"""What a developer runs by hand. The shell scripts run from anywhere (`scripts/test.sh`); the
Python ones are modules run from the repository root with the project's interpreter
(`.venv/bin/python -m scripts.NAME`), so they import this checkout's packages and devtools/.

  setup.sh, test.sh, demo.sh           .venv, the checks and tests, the demo app
  install_chromium.sh, install_ocr.sh, install_postgres.sh, install_ldap.sh
                                       system packages some tests use
  make_samples.py                      the sample handbook in data/samples
  make_smollm2.py                      SmolLM2-135M-Instruct as a checkpoint vLLM's CPU build serves
  screenshots.py, screenshots_conversations.py, screenshots_owners.py
                                       the pictures in docs/, by headless Chromium
"""
