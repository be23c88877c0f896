# Moderation models (word list, review queue, reports, sanctions, audit log) come with issue 4.
