// The Train view's task data as a corpus for the head atlas (model/atlas.h): the task's held-out
// sentence pairs, the ones training never sees.
#pragma once

#include "model/atlas.h"
#include "train/tasks.h"

namespace attnviz {

// The held-out pairs of `task`, words joined by spaces (the task's vocabularies are words), source
// and target as a teacher-forced pair. Throws Error(BadInput) when the task holds none.
Corpus trainingTaskCorpus(const Task& task);

}  // namespace attnviz
