"""Runs a fail2ban action's ban as fail2ban runs it: fail2ban's own ActionReader reads the action
file (its [Init] values, `%%` as ConfigParser reads it), CommandAction replaces the tags (escaping
<matches>) and executes the command with a shell. Used by the tests with Debian's fail2ban.

Usage: fail2ban-ban.py CONFDIR ACTION IP MATCHES_FILE [NAME=VALUE ...]
"""
import sys
import time

from fail2ban.client.actionreader import ActionReader
from fail2ban.server.action import CommandAction
from fail2ban.server.ipdns import IPAddr

confdir, action, ip, matches_file, *assignments = sys.argv[1:]
options = dict(a.split('=', 1) for a in assignments)
reader = ActionReader(action, 'sshd', options, basedir=confdir)
if not reader.read():
    sys.exit('cannot read action.d/%s.conf under %s' % (action, confdir))
reader.getOptions({})
command = CommandAction(None, action)
for stream in reader.convert():
    if stream[0] == 'multi-set':
        for name, value in stream[4]:
            setattr(command, name, value)
    elif stream[0] == 'set' and len(stream) > 5:
        setattr(command, stream[4], stream[5])
with open(matches_file) as f:
    matches = f.read()
info = {'ip': IPAddr(ip), 'family': 'inet6' if ':' in ip else 'inet4', 'matches': matches, 'failures': len(matches.splitlines()),
        'time': time.time(), 'bantime': 600, 'bancount': 1}
command.ban(info)  # raises when the command fails, as fail2ban logs it
print(command.actionban)
